"""Prints the workspace of ds-compile artifacts against the sequence length
and checks how it grows.

usage: arena_growth.py DIR_T1 DIR_T2 ... (artifact dirs named ...-T)

Prints one line per artifact, "T=<T> arena <bytes>", then for each doubling
of T the ratio of the arenas and "linear" when it is at most 2.1 (x2 plus
the odd fixed buffer), "QUADRATIC" otherwise.
"""
import json
import re
import sys

arenas = []
for d in sys.argv[1:]:
    t = int(re.search(r"(\d+)$", d.rstrip("/"))[1])
    manifest = json.load(open(f"{d}/manifest.json"))
    total = 0
    for m in re.finditer(r'"arena_bytes":\s*(\d+)', json.dumps(manifest)):
        total += int(m[1])
    arenas.append((t, total))
    print(f"T={t} arena {total}")
for (t0, a0), (t1, a1) in zip(arenas, arenas[1:]):
    ratio = a1 / a0
    word = "linear" if t1 == 2 * t0 and ratio <= 2.1 else "QUADRATIC"
    print(f"T={t0}->{t1}: x{ratio:.2f} {word}")
