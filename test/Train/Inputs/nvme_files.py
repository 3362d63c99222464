"""Checks the NVMe swap's files against a checkpoint of the same run.

usage: nvme_files.py SWAP_DIR CHECKPOINT_RANK_FILE
Every f32 Adam moment the rank holds (its ZeRO chunk, from the checkpoint's
"held" ranges) has a file SWAP_DIR/<name>.swp of its bytes rounded up to
4096, and no other file is there. Prints the count, or what differs.
"""
import json
import os
import struct
import sys

swap, ckpt = sys.argv[1], sys.argv[2]
with open(ckpt, "rb") as f:
    (n,) = struct.unpack("<Q", f.read(8))
    header = json.loads(f.read(n))
meta = header.pop("__metadata__", {})
expected = {}
for name, t in header.items():
    if not name.endswith((".exp_avg", ".exp_avg_sq")):
        continue
    start, end = t["data_offsets"]
    expected[name + ".swp"] = (end - start + 4095) // 4096 * 4096
found = {f: os.path.getsize(os.path.join(swap, f)) for f in os.listdir(swap)}
if found == expected:
    print(f"{len(found)} state files of the expected sizes")
else:
    for f in sorted(set(found) | set(expected)):
        if found.get(f) != expected.get(f):
            print(f"{f}: found {found.get(f)}, expected {expected.get(f)}")
