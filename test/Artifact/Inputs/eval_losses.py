"""Compares the eval losses of two runs of the same job.

usage: eval_losses.py REFERENCE.jsonl OTHER.jsonl [--rel TOL] [--in-order]
Prints the steps that evaluated (both runs must evaluate at the same
steps; with --in-order, as many times, and the k-th evals are compared),
then "eval losses bitwise equal" (no --rel) or whether the largest
relative difference is within TOL. JSON doubles round-trip exactly, so ==
on the parsed values is a bitwise comparison.
"""
import json
import sys


def evals(path):
    return {r["step"]: r["eval_loss"]
            for r in map(json.loads, open(path)) if "eval_loss" in r}


args = [a for a in sys.argv[1:] if a != "--in-order"]
ref, got = evals(args[0]), evals(args[1])
if "--in-order" in sys.argv:
    ref, got = (dict(enumerate((d[s] for s in sorted(d)), 1)) for d in (ref, got))
tol = float(args[3]) if args[2:3] == ["--rel"] else None
if not ref or sorted(ref) != sorted(got):
    sys.exit(f"evaluated at steps {sorted(ref)} vs {sorted(got)}")
if "--in-order" in sys.argv:
    print(f"{len(ref)} eval(s) in order")
else:
    print("eval at steps " + ",".join(map(str, sorted(ref))))
if tol is None:
    same = all(got[s] == ref[s] for s in ref)
    print("eval losses bitwise equal" if same else "eval losses DIFFER")
else:
    worst = max(abs(got[s] - ref[s]) / abs(ref[s]) for s in ref)
    print(f"max relative eval loss difference "
          f"{'within' if worst <= tol else 'ABOVE'} {tol:g} ({worst:.1e})")
