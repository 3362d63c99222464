"""Compares, byte for byte, the copies of every tensor two pipeline stages
hold (a tied weight and its optimizer state), read from the shard files
themselves (struct and json only, independent of ds's checksums).

usage: tied_copies.py TAGDIR
Prints one line per tensor with copies: "NAME: rankA == rankB" or "DIFFER".
"""
import json
import os
import struct
import sys

tagdir = sys.argv[1]
manifest = json.load(open(os.path.join(tagdir, "manifest.json")))


def raw(file, name):
    data = open(os.path.join(tagdir, file), "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    begin, end = json.loads(data[8:8 + n])[name]["data_offsets"]
    return data[8 + n + begin:8 + n + end]


for t in manifest["tensors"]:
    for copy in t.get("copies", []):
        first = next(s for s in t["slices"] if s["first"] == copy["first"])
        same = raw(first["file"], t["name"]) == raw(copy["file"], t["name"])
        print(f"{t['name']}: rank{first['rank']} "
              f"{'==' if same else 'DIFFER'} rank{copy['rank']}")
