"""Compares two ds-train runs: JSONL losses and --save-weights safetensors.

usage: compare_moe.py NAME A.jsonl B.jsonl [A.safetensors B.safetensors]
                      [--tol T] [--rel-norm R]
Prints whether the losses (and final weights) are bitwise equal and the
largest relative loss / absolute weight difference, and checks it against
T when given. --rel-norm checks the weights instead by the whole model's
relative difference, |A - B| / |B| over all tensors, against R (a weight
whose exact gradient is zero, as an attention key bias's, moves by
rounding noise that Adam scales up to lr-sized steps, so no per-element
bound holds for it).
"""
import math
import json
import struct
import sys


def losses(path):
    return [json.loads(line)["loss"] for line in open(path)]


def tensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        raw = data[a:b]
        out[name] = (raw, struct.unpack(f"<{len(raw) // 4}f", raw))
    return out


args = sys.argv[1:]
tol = None
rel_norm = None
if "--rel-norm" in args:
    i = args.index("--rel-norm")
    rel_norm = float(args[i + 1])
    del args[i:i + 2]
if "--tol" in args:
    i = args.index("--tol")
    tol = float(args[i + 1])
    del args[i:i + 2]
name, a, b = args[:3]
la, lb = losses(a), losses(b)
worst = max(abs(x - y) / abs(y) for x, y in zip(la, lb))
verdict = "bitwise equal" if la == lb else "differ"
if tol is not None:
    verdict += ", within tolerance" if worst <= tol else ", TOO FAR"
print(f"{name}: {len(la)} vs {len(lb)} steps, losses {verdict} "
      f"(max relative {worst:.1e})")
if len(args) == 5:
    ta, tb = tensors(args[3]), tensors(args[4])
    same_names = sorted(ta) == sorted(tb)
    bitwise = same_names and all(ta[k][0] == tb[k][0] for k in ta)
    diff = max((abs(x - y) for k in ta if k in tb
                for x, y in zip(ta[k][1], tb[k][1])), default=0.0)
    verdict = "bitwise equal" if bitwise else "differ"
    if tol is not None:
        verdict += ", within tolerance" if same_names and diff <= tol \
            else ", TOO FAR"
    print(f"{name}: {len(ta)} weights, {verdict} (max abs {diff:.1e})")
    if rel_norm is not None:
        num = sum((x - y) ** 2 for k in ta if k in tb
                  for x, y in zip(ta[k][1], tb[k][1]))
        den = sum(y * y for k in tb for y in tb[k][1])
        rel = math.sqrt(num / den)
        verdict = "within tolerance" if same_names and rel <= rel_norm \
            else "TOO FAR"
        print(f"{name}: weights' relative difference {rel:.1e}, {verdict}")
