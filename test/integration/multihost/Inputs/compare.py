"""compare.py A.jsonl B.jsonl: are two runs' losses and gradient norms bitwise
equal, step by step?"""
import json
import sys

a, b = ([json.loads(line) for line in open(p)] for p in sys.argv[1:3])
print(f"{len(a)} and {len(b)} steps")
for key in ("loss", "grad_norm"):
    same = len(a) == len(b) and all(x[key] == y[key] for x, y in zip(a, b))
    print(f"{key}: {'bitwise equal' if same else 'DIFFER'}")
