"""Compares ds-train JSONL metrics of data-parallel runs with a one-rank run.

usage: compare.py REFERENCE.jsonl STAGE0.jsonl STAGE1.jsonl STAGE2.jsonl STAGE3.jsonl
Checks, and prints one line per fact:
  - every stage's losses match the one-rank run within 1e-5 relative;
  - the four stages' losses are bitwise identical to each other;
  - model_state_bytes is within 5% of the ZeRO paper's fp32 formula for
    dp = 2 (16P, 8P + 8P/N, 4P + 12P/N, 16P/N), P from the one-rank run.
"""
import json
import sys


def load(path):
    return [json.loads(line) for line in open(path)]


ref = load(sys.argv[1])
runs = [load(p) for p in sys.argv[2:6]]
n = 2
# The one-rank run holds params + grads + Adam state whole: 16 bytes/param.
psi = ref[0]["model_state_bytes"] / 16
formula = [16 * psi, 8 * psi + 8 * psi / n, 4 * psi + 12 * psi / n,
           16 * psi / n]
for stage, run in enumerate(runs):
    worst = max(abs(a["loss"] - b["loss"]) / abs(b["loss"])
                for a, b in zip(run, ref))
    print(f"stage {stage}: {len(run)} steps, max relative loss difference "
          f"{'ok' if worst <= 1e-5 else 'TOO LARGE'} ({worst:.2e})")
    same = all(a["loss"] == b["loss"] for a, b in zip(run, runs[0]))
    print(f"stage {stage}: losses {'bitwise equal' if same else 'DIFFER'} "
          f"to stage 0")
    got = run[-1]["model_state_bytes"]
    off = abs(got - formula[stage]) / formula[stage]
    print(f"stage {stage}: model_state_bytes "
          f"{'within 5%' if off <= 0.05 else 'OFF'} of the formula "
          f"({got} vs {formula[stage]:.0f}, {off:.2%})")
