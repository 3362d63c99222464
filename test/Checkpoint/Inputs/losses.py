"""Compares the losses of a resumed run with those of an uninterrupted one.

usage: losses.py UNINTERRUPTED.jsonl RESUMED.jsonl [--rel TOL]
Prints the resumed step range, then "losses bitwise equal" (no --rel) or
whether the largest relative difference is within TOL.
"""
import json
import sys

ref = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[1]))}
got = [json.loads(line) for line in open(sys.argv[2])]
tol = float(sys.argv[4]) if sys.argv[3:4] == ["--rel"] else None
print(f"resumed steps {got[0]['step']}..{got[-1]['step']} of {max(ref)}")
if tol is None:
    same = all(r["loss"] == ref[r["step"]] for r in got)
    print("losses bitwise equal" if same else "losses DIFFER")
else:
    worst = max(abs(r["loss"] - ref[r["step"]]) / abs(ref[r["step"]])
                for r in got)
    print(f"max relative loss difference {'within' if worst <= tol else 'ABOVE'}"
          f" {tol:g} ({worst:.1e})")
