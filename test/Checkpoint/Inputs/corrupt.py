"""Damages one shard of a checkpoint the way disks and crashes do.

usage: corrupt.py flip TAGDIR FILE TENSOR   flip one bit in TENSOR's slice
       corrupt.py header TAGDIR FILE        flip one bit in the header
       corrupt.py truncate TAGDIR FILE      drop the last 100 bytes
"""
import json
import os
import sys

how, tagdir, name = sys.argv[1:4]
path = os.path.join(tagdir, name)
if how == "truncate":
    os.truncate(path, os.path.getsize(path) - 100)
    sys.exit(0)
if how == "header":
    at = 20
else:
    manifest = json.load(open(os.path.join(tagdir, "manifest.json")))
    tensor = next(t for t in manifest["tensors"] if t["name"] == sys.argv[4])
    piece = next(s for s in tensor["slices"] if s["file"] == name)
    at = piece["offset"] + piece["length"] // 2
with open(path, "r+b") as f:
    f.seek(at)
    byte = f.read(1)[0]
    f.seek(at)
    f.write(bytes([byte ^ 0x10]))
