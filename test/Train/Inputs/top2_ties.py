"""Checks ds's top-2 choices on tied logits against DeepSpeed's top2gating.

usage: top2_ties.py METRICS.jsonl TOKENS
The gate (zero_gate.py --tied) gives every token logits (2a, a, a, -a). The oracle
is top2gating's own choice evaluated by torch on such logits: the first
expert torch.argmax(softmax(logits)), the second torch.argmax of the logits
with the first masked to -inf (torch.argmax returns the first maximum). For
either sign of a the choices are {0, 1} or {3, 1}: every token chooses
expert 1 and none expert 2. ds's exp_counts (before capacity drops) must
say so for each step.
"""
import json
import sys

import torch

path, tokens = sys.argv[1], int(sys.argv[2])
chosen = set()
for a in (1.0, -1.0, 0.37, -2.5, 1e-3):
    logits = torch.tensor([[2 * a, a, a, -a]], dtype=torch.float32)
    gates = torch.softmax(logits, dim=1)
    first = torch.argmax(gates, dim=1)
    mask1 = torch.nn.functional.one_hot(first, num_classes=4).bool()
    second = torch.argmax(logits.masked_fill(mask1, float("-inf")), dim=1)
    chosen.add((int(first), int(second)))
every = set.intersection(*({f, s} for f, s in chosen))
never = set(range(4)) - set.union(*({f, s} for f, s in chosen))
print(f"DeepSpeed top2gating choices (torch): {sorted(chosen)}; "
      f"every token: {sorted(every)}, none: {sorted(never)}")
for line in open(path):
    m = json.loads(line)
    counts = m["moe/h.1/exp_counts"]
    ok = (all(counts[e] == tokens for e in every)
          and all(counts[e] == 0 for e in never)
          and sum(counts) == 2 * tokens)
    print(f"step {m['step']}: ds exp_counts {counts} "
          f"{'ok' if ok else 'FAIL'}")
