"""Copies a safetensors file with every MoE gate weight set to a known routing.

usage: zero_gate.py [--tied] IN.safetensors OUT.safetensors
A zero gate gives every expert the same probability 1/E, so each token's
choices are experts 0, 1, ..., k-1 (ties go to the lower index): a routing
known without running the model.
--tied makes each [4, C] gate weight rows (2w, w, w, -w), w its first row,
so a token's logits are (2a, a, a, -a) with a = x . w: experts 1 and 2 tie
exactly (same row, same products), and scaling w by 2 or -1 is exact.
"""
import json
import struct
import sys

args = sys.argv[1:]
tied = args[0] == "--tied"
src, dst = args[1:3] if tied else args[0:2]
with open(src, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header_bytes = f.read(n)
    data = bytearray(f.read())
header = json.loads(header_bytes)
changed = 0
for name, info in header.items():
    if name == "__metadata__" or not name.endswith("mlp.gate.weight"):
        continue
    a, b = info["data_offsets"]
    if not tied:
        data[a:b] = bytes(b - a)
    elif info["dtype"] != "F32" or info["shape"][0] != 4 or len(info["shape"]) != 2:
        sys.exit(f"{src}: {name} is {info['dtype']} {info['shape']}, "
                 "expected F32 [4, C]")
    else:
        cols = info["shape"][1]
        w = struct.unpack_from(f"<{cols}f", data, a)
        for row, scale in enumerate((2.0, 1.0, 1.0, -1.0)):
            struct.pack_into(f"<{cols}f", data, a + 4 * cols * row,
                             *(scale * v for v in w))
    changed += 1
if not changed:
    sys.exit(f"{src}: no *.mlp.gate.weight tensor")
with open(dst, "wb") as f:
    f.write(struct.pack("<Q", n))
    f.write(header_bytes)
    f.write(data)
