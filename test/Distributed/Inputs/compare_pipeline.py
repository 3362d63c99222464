"""Compares ds-train JSONL metrics of pipeline runs with a one-stage run.

usage: compare_pipeline.py [--bitwise] REFERENCE.jsonl NAME=RUN.jsonl...
Prints one line per run: the steps, whether every step's loss and gradient
norm match the reference within 1e-5 relative (with --bitwise: exactly; the
JSON numbers round-trip the f32 values; in fp16 also the loss scale and the
skipped steps exactly), and the largest difference.
"""
import json
import sys


def load(path):
    return [json.loads(line) for line in open(path)]


args = sys.argv[1:]
bitwise = args[0] == "--bitwise"
if bitwise:
    args = args[1:]
ref = load(args[0])
for arg in args[1:]:
    name, path = arg.split("=", 1)
    run = load(path)
    worst = 0.0
    same = True  # fp16: the same scales and skipped steps
    for a, b in zip(run, ref):
        for key in ("loss", "grad_norm"):
            if a[key] is None or b[key] is None:  # an overflowed step
                same = same and a[key] is None and b[key] is None
                continue
            worst = max(worst, abs(a[key] - b[key]) / abs(b[key]))
        for key in ("loss_scale", "skipped"):
            same = same and a.get(key) == b.get(key)
    ok = (len(run) == len(ref) and worst <= (0.0 if bitwise else 1e-5)
          and same)
    agree = "bitwise equal" if bitwise else "within 1e-5"
    print(f"{name}: {len(run)} steps, loss and grad_norm "
          f"{agree if ok else 'DIFFER'} ({worst:.2e})")
