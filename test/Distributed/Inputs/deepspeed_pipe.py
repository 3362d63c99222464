#!/usr/bin/env python3
"""The oracle for ds-report's pipeline section: DeepSpeed's pipeline rules as
its documentation and source describe them (deepspeed/runtime/pipe/
schedule.py TrainSchedule, runtime/utils.py partition_uniform and
partition_balanced, pipe/module.py _partition_layers, 0.19.x), computed here
from the model spec alone, independently of ds.

  deepspeed_pipe.py schedules DS_REPORT SPEC TMPDIR
      every stage's 1F1B stream, step by step, with its buffer count, for
      p in {2, 3, 4} stages and m in {1, 2, 4, 8} micro-batches
  deepspeed_pipe.py partitions DS_REPORT TMPDIR SPEC:STAGES[,STAGES...]...
      the layer list, the boundaries and the parameters each stage holds,
      for uniform, parameters and two type: regexes

Each case runs `DS_REPORT --model SPEC --config C --world-size p --json`
and exits non-zero with the first difference.
"""
import json
import math
import os
import re
import subprocess
import sys


def fail(what):
    sys.exit("MISMATCH: " + what)


# --- TrainSchedule ---------------------------------------------------------

def train_schedule(m, p, s):
    """(steps, buffers): the instruction names and buffer ids per step."""
    buffers = max(2, min(p - s, m))
    valid = lambda mb: 0 <= mb < m
    steps = []
    prev = -1
    for t in range(2 * (m + p - 1)):
        # Even stages forward on even steps, odd stages on odd steps.
        forward = (t % 2) == (s % 2)
        if forward:
            mb = t // 2 - s // 2
        elif t % 2 == 0:
            mb = t // 2 - p + (s + 1) // 2
        else:
            mb = (t - 1) // 2 - p + 1 + s // 2
        cmds = []
        if forward:
            if valid(prev) and s > 0:
                cmds.append(["SendGrad", prev % buffers])
            if valid(mb) and s > 0:
                cmds.append(["RecvActivation", mb % buffers])
        else:
            if valid(mb) and s < p - 1:
                cmds.append(["RecvGrad", mb % buffers])
            if valid(prev) and s < p - 1:
                cmds.append(["SendActivation", prev % buffers])
        if (s == 0 or s == p - 1) and forward and valid(mb):
            cmds.append(["LoadMicroBatch", mb % buffers])
        if valid(mb):
            cmds.append(["ForwardPass" if forward else "BackwardPass",
                         mb % buffers])
        if t == 2 * (m + p - 1) - 1:
            cmds += [["ReduceTiedGrads", None], ["ReduceGrads", None],
                     ["OptimizerStep", None]]
        steps.append(cmds)
        prev = mb
    return steps, buffers


def check_schedule(report):
    pipe = report["pipeline"]
    p, m = pipe["stages"], pipe["micro_batches"]
    sched = pipe["schedule"]
    if sched["kind"] != "1f1b":
        fail("schedule kind %r, expected 1f1b" % sched["kind"])
    if len(sched["stages"]) != p:
        fail("%d streams for %d stages" % (len(sched["stages"]), p))
    for s in range(p):
        steps, buffers = train_schedule(m, p, s)
        got = sched["stages"][s]
        if sched["buffers"][s] != buffers:
            fail("stage %d: %d buffers, DeepSpeed %d"
                 % (s, sched["buffers"][s], buffers))
        if len(got) != len(steps) or sched["steps"] != len(steps):
            fail("stage %d: %d steps, DeepSpeed %d" % (s, len(got), len(steps)))
        for t, (g, e) in enumerate(zip(got, steps)):
            if g != e:
                fail("p=%d m=%d stage %d step %d: ds %s, DeepSpeed %s"
                     % (p, m, s, t, g, e))
    print("1f1b p=%d m=%d: %d stages match DeepSpeed's TrainSchedule" % (p, m, p))


# --- Partitions ------------------------------------------------------------

def partition_uniform(n, parts):
    if n <= parts:
        return [min(i, n) for i in range(parts + 1)]
    chunk, residual = divmod(n, parts)
    bounds = [i * chunk for i in range(parts + 1)]
    for i in range(residual):
        for j in range(i + 1, parts + 1):
            bounds[j] += 1
    return bounds


def partition_balanced(weights, parts):
    n, m = len(weights), parts
    if n <= m:
        return partition_uniform(n, m)
    inf = math.inf
    dp_max = [[inf] * (m + 1) for _ in range(n + 1)]
    dp_min = [[inf] * (m + 1) for _ in range(n + 1)]
    dp_cost = [[inf] * (m + 1) for _ in range(n + 1)]
    pos = [[0] * (m + 1) for _ in range(n + 1)]
    prefix = [0.0]
    for w in weights:
        prefix.append(prefix[-1] + float(w))
    dp_max[0][0] = 0
    dp_cost[0][0] = 0
    for i in range(1, n + 1):
        for j in range(1, min(i, m) + 1):
            for k in range(i):
                seg = prefix[i] - prefix[k]
                hi = max(dp_max[k][j - 1], seg)
                lo = min(dp_min[k][j - 1], seg)
                if dp_cost[i][j] >= hi - lo:
                    dp_cost[i][j] = hi - lo
                    dp_max[i][j] = hi
                    dp_min[i][j] = lo
                    pos[i][j] = k
    bounds = [n]
    for j in range(m, 0, -1):
        bounds.append(pos[bounds[-1]][j])
    return bounds[::-1]


def gpt_layers(spec):
    """(name, type, {param: elements}) per pipeline layer of a GPT spec: the
    embedding, the blocks, the final LayerNorm and the LM head (the tied
    head holds the token embedding again)."""
    C, V, T = spec["n_embd"], spec["vocab_size"], spec["n_positions"]
    layers = [("embed", "GPT2Embedding",
               {"wte.weight": V * C, "wpe.weight": T * C})]
    for i in range(spec["n_layer"]):
        h = "h.%d." % i
        layers.append(("h.%d" % i, "GPT2Block", {
            h + "ln_1": 2 * C, h + "attn.c_attn": 3 * C * C + 3 * C,
            h + "attn.c_proj": C * C + C, h + "ln_2": 2 * C,
            h + "mlp.c_fc": 4 * C * C + 4 * C,
            h + "mlp.c_proj": 4 * C * C + C}))
    layers.append(("ln_f", "LayerNorm", {"ln_f": 2 * C}))
    tied = spec.get("tie_word_embeddings", True)
    layers.append(("head", "Head",
                   {"wte.weight" if tied else "lm_head.weight": V * C}))
    return layers


def check_partition(report, spec):
    pipe = report["pipeline"]
    layers = gpt_layers(spec)
    if pipe["layers"] != [l[0] for l in layers]:
        fail("layers %s, expected %s" % (pipe["layers"], [l[0] for l in layers]))
    if pipe["types"] != [l[1] for l in layers]:
        fail("types %s, expected %s" % (pipe["types"], [l[1] for l in layers]))
    stages, method = pipe["stages"], pipe["partition_method"].lower()
    if method == "uniform":
        expected = partition_uniform(len(layers), stages)
    elif method == "parameters":
        expected = partition_balanced([sum(l[2].values()) for l in layers],
                                      stages)
    elif method.startswith("type:"):
        regex = re.compile(method.split(":")[1], re.IGNORECASE)
        expected = partition_balanced(
            [1 if regex.search(l[1]) else 0 for l in layers], stages)
    else:
        fail("no DeepSpeed oracle for partition method %r" % method)
    if pipe["parts"] != expected:
        fail("%s over %d stages: ds parts %s, DeepSpeed %s"
             % (method, stages, pipe["parts"], expected))
    held = []
    for s in range(stages):
        params = {}
        for name, _, ps in layers[expected[s]:expected[s + 1]]:
            params.update(ps)
        held.append(sum(params.values()))
    if pipe["stage_params"] != held:
        fail("stage_params %s, expected %s" % (pipe["stage_params"], held))
    print("%s over %d stages: parts %s match DeepSpeed" % (method, stages,
                                                           expected))


def run_report(ds_report, spec, tmpdir, stages, micro_batches, method):
    config = {"train_micro_batch_size_per_gpu": 1,
              "gradient_accumulation_steps": micro_batches,
              "pipeline": {"stages": stages, "partition_method": method}}
    path = os.path.join(tmpdir, "pipe-%d-%d.json" % (stages, micro_batches))
    with open(path, "w") as f:
        json.dump(config, f)
    out = subprocess.run([ds_report, "--model", spec, "--config", path,
                          "--world-size", str(stages), "--json"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        fail("ds-report failed on %s: %s" % (json.dumps(config), out.stderr))
    return json.loads(out.stdout)


def main():
    mode, ds_report = sys.argv[1], sys.argv[2]
    if mode == "schedules":
        spec, tmpdir = sys.argv[3], sys.argv[4]
        for p in (2, 3, 4):
            for m in (1, 2, 4, 8):
                check_schedule(run_report(ds_report, spec, tmpdir, p, m,
                                          "uniform"))
    elif mode == "partitions":
        tmpdir = sys.argv[3]
        for arg in sys.argv[4:]:
            spec_path, stages = arg.rsplit(":", 1)
            with open(spec_path) as f:
                spec = json.load(f)
            for p in map(int, stages.split(",")):
                for method in ("uniform", "parameters", "type:GPT2Block",
                               "type:BLOCK|norm"):
                    check_partition(run_report(ds_report, spec_path, tmpdir,
                                               p, 1, method), spec)
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
