"""Compares the tensors mlir-runner printed (printMemrefF32) on stdin with
the `// EXPECT:` lines of a test file, one line per printed tensor, in order.

`// TOLERANCE: RTOL ATOL` in the test overrides the default 1e-5 / 1e-6.
Exits 1 naming the first tensor and element that differ.
"""
import math
import re
import sys

NUMBER = re.compile(r"-?(?:nan|inf|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)")


def parse_printed(text):
    tensors = []
    for chunk in text.split("Unranked Memref")[1:]:
        data = chunk.split("data =", 1)[1]
        tensors.append([float(x) for x in NUMBER.findall(data)])
    return tensors


def main():
    test = open(sys.argv[1]).read()
    expected = [[float(x) for x in NUMBER.findall(line)]
                for line in re.findall(r"^// EXPECT:(.*)$", test, re.M)]
    tol = re.search(r"^// TOLERANCE:\s*(\S+)\s+(\S+)", test, re.M)
    rtol, atol = (float(tol[1]), float(tol[2])) if tol else (1e-5, 1e-6)
    got = parse_printed(sys.stdin.read())
    if len(got) != len(expected):
        sys.exit(f"printed {len(got)} tensors, expected {len(expected)}")
    for t, (g, e) in enumerate(zip(got, expected)):
        if len(g) != len(e):
            sys.exit(f"tensor {t}: {len(g)} elements, expected {len(e)}")
        for i, (a, b) in enumerate(zip(g, e)):
            same_special = (math.isnan(a) and math.isnan(b)) or a == b
            if not same_special and not abs(a - b) <= atol + rtol * abs(b):
                sys.exit(f"tensor {t} element {i}: got {a}, expected {b} "
                         f"(rtol {rtol}, atol {atol})")
    print(f"allclose: {len(got)} tensors match")


if __name__ == "__main__":
    main()
