"""Compares the losses of a resumed run with those of an uninterrupted one.

usage: losses.py UNINTERRUPTED.jsonl RESUMED.jsonl [--rel TOL] [--grad-norm]
Prints the resumed step range, then "losses bitwise equal" (no --rel) or
whether the largest relative difference is within TOL; with --grad-norm a
second line says the same of the gradient norms.
"""
import json
import sys

args = [a for a in sys.argv[1:] if a != "--grad-norm"]
keys = ["loss"] + (["grad_norm"] if "--grad-norm" in sys.argv else [])
ref = {r["step"]: r for r in map(json.loads, open(args[0]))}
got = [json.loads(line) for line in open(args[1])]
tol = float(args[3]) if args[2:3] == ["--rel"] else None
print(f"resumed steps {got[0]['step']}..{got[-1]['step']} of {max(ref)}")
for key in keys:
    what = "losses" if key == "loss" else "grad norms"
    if tol is None:
        same = all(r[key] == ref[r["step"]][key] for r in got)
        print(f"{what} bitwise equal" if same else f"{what} DIFFER")
    else:
        worst = max(abs(r[key] - ref[r["step"]][key]) / abs(ref[r["step"]][key])
                    for r in got)
        word = "loss" if key == "loss" else "grad norm"
        print(f"max relative {word} difference "
              f"{'within' if worst <= tol else 'ABOVE'} {tol:g} ({worst:.1e})")
