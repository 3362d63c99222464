"""Prints the MoE routing fields of a ds-train JSONL metrics file.

usage: routing_metrics.py METRICS.jsonl [LAYER]
One line per step: the per-expert counts, the dropped fraction and the aux
loss of LAYER (default h.1), then their sum of counts.
"""
import json
import sys

path = sys.argv[1]
layer = sys.argv[2] if len(sys.argv) > 2 else "h.1"
for line in open(path):
    m = json.loads(line)
    p = f"moe/{layer}/"
    counts = m[p + "exp_counts"]
    print(f"step {m['step']}: exp_counts {counts} sum {sum(counts)} "
          f"dropped {m[p + 'dropped_fraction']:.6f} "
          f"aux {m[p + 'aux_loss']:.6f}")
