"""Checks mixed-precision ds-train metrics.

  track FP32 BF16      bf16 losses follow the fp32 run of the same config:
                       within 0.01 nats per step over the first 20 steps,
                       mean |diff| <= 0.05 over the run, and last-10 means
                       within 0.05 (later steps decorrelate slowly, as two
                       fp32 runs with different summation orders do).
  scaler FILE [MORE]   the reported loss_scale follows DeepSpeed's dynamic
                       loss scaler (re-implemented here from its definition)
                       fed with the reported skip flags; the run starts
                       with overflows that are skipped, then recovers: the
                       last-10 mean loss is below 4.0 and the first applied
                       step uses the schedule's first rate. Other files
                       (other ranks) must report the same scale and skips.
"""
import json
import math
import sys


def load(path):
    return [json.loads(line) for line in open(path)]


def track(fp32_path, bf16_path):
    a = [m["loss"] for m in load(fp32_path)]
    b = [m["loss"] for m in load(bf16_path)]
    if len(a) != len(b):
        sys.exit(f"{len(a)} fp32 steps but {len(b)} bf16 steps")
    d = [abs(x - y) for x, y in zip(a, b)]
    early = max(d[:20])
    mean = sum(d) / len(d)
    tail = abs(sum(a[-10:]) - sum(b[-10:])) / 10
    print(f"first-20 max |diff| {early:.4f}, mean |diff| {mean:.4f}, "
          f"last-10 means {sum(a[-10:]) / 10:.4f} vs {sum(b[-10:]) / 10:.4f}")
    if early > 0.01 or mean > 0.05 or tail > 0.05:
        sys.exit("bf16 does not track fp32 within the tolerance")
    if b[0] - sum(b[-10:]) / 10 < 1.0:
        sys.exit("bf16 run does not learn")


def scaler(paths, power=32, window=5, hysteresis=2, min_scale=1.0):
    runs = [load(p) for p in paths]
    steps = runs[0]
    scale, left, good = 2.0 ** power, hysteresis, 0
    skipped = 0
    for m in steps:
        if m["skipped"]:
            skipped += 1
            good = 0
            if hysteresis == 1 or left <= 1:
                scale = max(scale / 2, min_scale)
            else:
                left -= 1
        else:
            good += 1
            if good % window == 0:
                scale *= 2
                left = hysteresis
        if m["loss_scale"] != scale:
            sys.exit(f"step {m['step']}: loss_scale {m['loss_scale']} but the "
                     f"scaler gives {scale}")
    first_applied = next((m for m in steps if not m["skipped"]), None)
    if not steps[0]["skipped"] or first_applied is None:
        sys.exit("expected overflowing steps first, then applied ones")
    if first_applied["lr"] != 0.0:
        sys.exit(f"first applied step has lr {first_applied['lr']}: the "
                 "schedule advanced on skipped steps")
    for m in steps:
        if m["skipped"] and m["grad_norm"] is not None and math.isfinite(
                m["grad_norm"]):
            sys.exit(f"step {m['step']} was skipped with a finite grad norm")
    tail = sum(m["loss"] for m in steps[-10:]) / 10
    print(f"{skipped} skipped steps, first applied step "
          f"{first_applied['step']}, final scale {scale:g}, last-10 mean "
          f"loss {tail:.4f}")
    if tail > 4.0:
        sys.exit("training does not recover after the skipped steps")
    for path, other in zip(paths[1:], runs[1:]):
        for m, o in zip(steps, other):
            if (m["skipped"], m["loss_scale"]) != (o["skipped"], o["loss_scale"]):
                sys.exit(f"{path} step {o['step']}: skipped/scale "
                         f"{o['skipped']}/{o['loss_scale']} but rank 0 has "
                         f"{m['skipped']}/{m['loss_scale']}")
    print(f"{len(paths)} rank(s) agree")


if __name__ == "__main__":
    if sys.argv[1] == "track":
        track(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "scaler":
        scaler(sys.argv[2:])
    else:
        sys.exit("usage: check_precision.py track FP32 BF16 | scaler FILE...")
