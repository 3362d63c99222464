"""Compares the F32 tensors of two safetensors files within a tolerance.

usage: st_close.py FILE REFERENCE TOL [SUBSTRING]
Both files must hold the same tensor names and shapes. For each tensor
(only those whose name contains SUBSTRING when given) the largest
|file - reference| is measured against the reference's largest |value|;
prints how many tensors are within TOL of it, or the first one that is not.
"""
import json
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        body = f.read()
    header.pop("__metadata__", None)
    out = {}
    for name, entry in header.items():
        assert entry["dtype"] == "F32", f"{name}: {entry['dtype']}, not F32"
        begin, end = entry["data_offsets"]
        out[name] = (entry["shape"],
                     struct.unpack(f"<{(end - begin) // 4}f", body[begin:end]))
    return out


got, ref = read(sys.argv[1]), read(sys.argv[2])
tol = float(sys.argv[3])
part = sys.argv[4] if len(sys.argv) > 4 else ""
assert sorted(got) == sorted(ref), "the files hold different tensors"
names = [k for k in sorted(ref) if part in k]
for name in names:
    assert got[name][0] == ref[name][0], f"{name}: shapes differ"
    scale = max(abs(v) for v in ref[name][1]) or 1.0
    worst = max(abs(a - b) for a, b in zip(got[name][1], ref[name][1]))
    if worst > tol * scale:
        print(f"{name}: TOO FAR ({worst / scale:.1e} of its largest value)")
        sys.exit(1)
print(f"{len(names)} tensors within {tol:g} of their largest value")
