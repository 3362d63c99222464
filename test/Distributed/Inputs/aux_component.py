"""Checks a run's reported aux loss against its share of the loss.

usage: aux_component.py WITH.jsonl WITHOUT.jsonl COEF [LAYER]
Both runs start from the same weights and batch, one with
moe.aux_loss_coef = COEF and one with 0, so their first losses differ by
COEF x the aux loss exactly (up to f32 rounding of the loss).
"""
import json
import sys

with_aux, without, coef = sys.argv[1], sys.argv[2], float(sys.argv[3])
layer = sys.argv[4] if len(sys.argv) > 4 else "h.1"
a = json.loads(open(with_aux).readline())
b = json.loads(open(without).readline())
component = (a["loss"] - b["loss"]) / coef
reported = a[f"moe/{layer}/aux_loss"]
diff = abs(component - reported)
print(f"aux loss reported {reported:.6f}, loss component {component:.6f}: "
      + ("equal within 1e-5" if diff <= 1e-5 else f"DIFFER by {diff:.3g}"))
