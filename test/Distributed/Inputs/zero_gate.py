"""Copies a safetensors file with every MoE gate weight set to zero.

usage: zero_gate.py IN.safetensors OUT.safetensors
A zero gate gives every expert the same probability 1/E, so each token's
choices are experts 0, 1, ..., k-1 (ties go to the lower index): a routing
known without running the model.
"""
import json
import struct
import sys

src, dst = sys.argv[1:3]
with open(src, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header_bytes = f.read(n)
    data = bytearray(f.read())
header = json.loads(header_bytes)
zeroed = 0
for name, info in header.items():
    if name == "__metadata__" or not name.endswith("mlp.gate.weight"):
        continue
    a, b = info["data_offsets"]
    data[a:b] = bytes(b - a)
    zeroed += 1
if not zeroed:
    sys.exit(f"{src}: no *.mlp.gate.weight tensor")
with open(dst, "wb") as f:
    f.write(struct.pack("<Q", n))
    f.write(header_bytes)
    f.write(data)
