"""Checks ZeRO-3 with a persistence threshold against a count by hand.

usage: persistence.py MODEL.mlir THRESHOLD DP PLAN.txt [RUN.jsonl STAGE0.jsonl]
From the parameter shapes of @forward, for fp32 Adam: a parameter of at
most THRESHOLD elements is whole on every rank (DeepSpeed's ds_persist),
any other is this rank's chunk ceil(n / DP); the gradient and the two Adam
moments are chunks for every parameter. Prints one line per fact: the
ds-plan-memory remark in PLAN.txt agrees; with the metrics of a two-rank
run, its model_state_bytes agrees and its losses are bitwise those of the
stage-0 run.
"""
import json
import math
import re
import sys

text = open(sys.argv[1]).read()
threshold, dp = int(sys.argv[2]), int(sys.argv[3])
signature = text[text.index("func.func @forward("):]
signature = signature[:signature.index("{\n")]
params = re.findall(r"tensor<([0-9x]+)xf32> \{dsnn.param", signature)
sizes = [math.prod(int(d) for d in shape.split("x")) for shape in params]
chunk = [math.ceil(n / dp) for n in sizes]
persistent = [n <= threshold for n in sizes]
param_bytes = sum(4 * (n if keep else c)
                  for n, c, keep in zip(sizes, chunk, persistent))
grad_bytes = sum(4 * c for c in chunk)
state_bytes = sum(8 * c for c in chunk)
total = param_bytes + grad_bytes + state_bytes
expected = (f"parameters {param_bytes} B, gradients {grad_bytes} B, "
            f"optimizer state {state_bytes} B; model states {total} B")
print(f"{sum(persistent)} of {len(sizes)} parameters persist")
plan = open(sys.argv[4]).read()
print("ds-plan-memory " + ("agrees" if expected in plan else
                           f"DIFFERS: expected {expected} in {plan}"))
if len(sys.argv) > 5:
    run = [json.loads(line) for line in open(sys.argv[5])]
    ref = [json.loads(line) for line in open(sys.argv[6])]
    got = run[-1]["model_state_bytes"]
    print("model_state_bytes " + ("agrees" if got == total else
                                  f"DIFFERS: {got} vs {total}"))
    same = [a["loss"] for a in run] == [b["loss"] for b in ref]
    print(f"{len(run)} steps, losses "
          f"{'bitwise equal' if same else 'DIFFER'} to stage 0")
