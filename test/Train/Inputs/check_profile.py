"""Checks a ds-train --profile JSON against a GPT spec.

Usage: check_profile.py PROFILE SPEC CONFIG [WORLD]: rank 0's profile of a
run on WORLD data-parallel ranks.

The GEMM class's FLOPs must be the step's matrix products counted from the
spec alone: forward 2*M*N*K per product (each layer's qkv, attention scores,
attention-weighted values, projection, MLP up and down; the tied head), and
backward twice that (one product for each input's gradient), plus the
attention scores the backward recomputes.
"""
import json
import sys

profile, spec, config = (json.load(open(p)) for p in sys.argv[1:4])
world = int(sys.argv[4]) if len(sys.argv) > 4 else 1  # rank 0's share
L, C, H = spec["n_layer"], spec["n_embd"], spec["n_head"]
T, V = spec["n_positions"], spec["vocab_size"]
B = config["train_batch_size"] // world
BT, hd = B * T, C // H


def mm(m, n, k, batch=1):
    return 2 * m * n * k * batch


layer = (mm(BT, 3 * C, C) + mm(T, T, hd, B * H) + mm(T, hd, T, B * H)
         + mm(BT, C, C) + mm(BT, 4 * C, C) + mm(BT, C, 4 * C))
forward = L * layer + mm(BT, V, C)
# The attention gradient recomputes the probabilities (dsnn.attention's
# contract, lib/Conversion/NNToLinalg/Attention.cpp): one more Q·Kᵀ a layer.
recompute = L * mm(T, T, hd, B * H)
analytic = 3 * forward + recompute

classes = {c["class"]: c for c in profile["classes"]}
print("classes:", ", ".join(classes))
print("with calls:", ", ".join(k for k, c in classes.items() if c["calls"] > 0))
gemm = classes["gemm"]["flops"]
print("gemm flops", gemm, "analytic", analytic,
      "equal" if gemm == analytic else "DIFFER")
step = profile["step_seconds"]
parts = sum(c["seconds"] for c in classes.values()) + profile["unattributed_seconds"]
print("classes + unattributed = step:",
      "yes" if abs(parts - step) <= 1e-9 * max(step, 1) else f"no ({parts} vs {step})")
print("unattributed share below 1:", profile["unattributed_seconds"] < step)
print("steps", profile["steps"], "after warm-up", profile["warmup_steps"])
print("kernels listed:", len(profile["kernels"]) > 0)
