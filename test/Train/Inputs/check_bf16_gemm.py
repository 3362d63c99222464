"""Compares bf16-gemm.test's runs: two on the dot products, one widened,
one fp32 (the oracle both bf16 runs must track)."""
import json
import sys


def losses(path):
    return [json.loads(line)["loss"] for line in open(path) if line.strip()]


dot, dot2, wide, fp32 = (losses(p) for p in sys.argv[1:5])
assert len(dot) == len(dot2) == len(wide) == len(fp32) == 20


def max_diff(a, b):
    return max(abs(x - y) for x, y in zip(a, b))


def bound(what, value, limit, unit):
    if not value < limit:
        sys.exit(f"{what}: {value:.3g} >= {limit}{unit}")
    print(f"{what}: {'relative ' if not unit else 'max '}{value:.2g}"
          f"{unit} (< {limit})")


if dot != dot2:
    sys.exit(f"run to run: differ: {dot} vs {dot2}")
print("run to run: bitwise")
if dot == wide:
    sys.exit("dot products vs widened: identical: did the dot products run?")
bound("step 1, dot products vs widened", abs(dot[0] - wide[0]) / abs(wide[0]),
      1e-5, "")
bound("dot products vs widened", max_diff(dot, wide), 0.002, " nats")
bound("dot products vs fp32", max_diff(dot, fp32), 0.01, " nats")
bound("widened vs fp32", max_diff(wide, fp32), 0.01, " nats")
