"""Compares result .npy files (f32/f64, as ds-run writes them) of two runs.

  npy_close.py RTOL GOT_0.npy,GOT_1.npy,... WANT_0.npy,WANT_1.npy,...

Per tensor, max |got - want| <= RTOL * max |want|: relative to the
tensor's scale, since an element that cancels to ~0 (a causal first row's
query gradient) has no meaningful elementwise relative error. Prints one
line per tensor; exits 1 on the first that is not close. Standard library
only, so the test needs no NumPy.
"""
import ast
import struct
import sys


def load(path):
    data = open(path, "rb").read()
    if data[:6] != b"\x93NUMPY":
        sys.exit(f"{path}: not a .npy file")
    major = data[6]
    hlen_size = 2 if major == 1 else 4
    hlen = int.from_bytes(data[8:8 + hlen_size], "little")
    start = 8 + hlen_size
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    fmt = {"<f4": "f", "<f8": "d"}.get(header["descr"])
    if fmt is None or header["fortran_order"]:
        sys.exit(f"{path}: {header['descr']} is not a C-order f32/f64 array")
    body = data[start + hlen:]
    n = len(body) // struct.calcsize(fmt)
    return header["shape"], struct.unpack(f"<{n}{fmt}", body)


def main():
    rtol = float(sys.argv[1])
    got, want = sys.argv[2].split(","), sys.argv[3].split(",")
    if len(got) != len(want):
        sys.exit(f"{len(got)} results against {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        gs, gv = load(g)
        ws, wv = load(w)
        if gs != ws:
            sys.exit(f"tensor {i}: shape {gs}, expected {ws}")
        scale = max(abs(x) for x in wv)
        worst = max(abs(a - b) for a, b in zip(gv, wv))
        if not worst <= rtol * scale:
            sys.exit(f"tensor {i}: max |difference| {worst:.3g} is "
                     f"{worst / scale:.3g} of max |x| {scale:.3g}, "
                     f"more than {rtol}")
        print(f"tensor {i} {list(gs)}: within {rtol} of max |x|")


if __name__ == "__main__":
    main()
