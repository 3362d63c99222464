"""Prints the workspace of ds-compile artifacts of one model at two
micro-batches, materialized and with the LM head and loss in row chunks,
and checks what the chunks save.

usage: loss_memory.py ROWS VOCAB MAT_A MAT_B CHUNKED_A CHUNKED_B
  (A at ROWS rows of logits, B at twice as many)

The materialized step holds the [N, V] logits (their gradient reuses
their buffer), so going from A to B adds at least the added rows' logits,
N V f32 bytes ("grows"); the chunked step's workspace grows by less than a
quarter of that ("bounded"), and at B it is smaller than the materialized
one by at least half of B's logits ("saves").
"""
import json
import re
import sys


def arena(d):
    text = json.dumps(json.load(open(f"{d}/manifest.json")))
    return sum(int(m[1]) for m in re.finditer(r'"arena_bytes":\s*(\d+)', text))


rows, vocab = int(sys.argv[1]), int(sys.argv[2])
mat_a, mat_b, chk_a, chk_b = (arena(d) for d in sys.argv[3:7])
logits = rows * vocab * 4
mib = 1 << 20
print(f"materialized: {mat_a / mib:.1f} MiB at {rows} rows, "
      f"{mat_b / mib:.1f} MiB at {2 * rows}")
print(f"chunked: {chk_a / mib:.1f} MiB at {rows} rows, "
      f"{chk_b / mib:.1f} MiB at {2 * rows}")
ok = True
grow = mat_b - mat_a
word = "grows" if grow >= logits else "DOES NOT GROW"
ok &= grow >= logits
print(f"materialized {word} by {grow / mib:.1f} MiB "
      f"(logits of {rows} more rows: {logits / mib:.1f} MiB)")
grow = chk_b - chk_a
word = "bounded" if grow < logits / 4 else "UNBOUNDED"
ok &= grow < logits / 4
print(f"chunked {word}: grows by {grow / mib:.1f} MiB "
      f"(a quarter of those logits: {logits / 4 / mib:.1f} MiB)")
saved = mat_b - chk_b
word = "saves" if saved >= logits else "SAVES TOO LITTLE"
ok &= saved >= logits
print(f"chunked {word} {saved / mib:.1f} MiB at {2 * rows} rows "
      f"(half their logits: {logits / mib:.1f} MiB)")
sys.exit(0 if ok else 1)
