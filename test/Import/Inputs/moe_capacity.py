#!/usr/bin/env python3
"""ds's expert capacity against DeepSpeed's formula evaluated by torch:
sharded_moe._capacity computes ceil((N / E) * torch.tensor(capacity_factor
* k)) in float32, then takes at least min_capacity. For each case, writes a
GPT spec with one MoE block whose micro-batch x sequence is N tokens,
imports it with ds-import and reads the capacity from the expert region's
[E, capacity, C] argument.

  moe_capacity.py DS_IMPORT WORKDIR
"""
import json
import re
import subprocess
import sys

import torch

# (micro-batch, T, E, capacity_factor, k, min_capacity)
CASES = [
    (5, 16, 3, 1.05, 1, 4),    # N = 80: float32 gives 28, double 29
    (5, 16, 3, 1.05, 2, 4),    # float32 56, double 57
    (4, 16, 8, 1.25, 2, 4),    # even: 20
    (3, 7, 5, 1.1, 1, 4),      # N = 21: 4.62 -> 5
    (2, 8, 8, 1.0, 1, 4),      # 2 per expert, floored at min_capacity 4
    (3, 10, 7, 0.7, 2, 1),     # 30 / 7 * 1.4 = 6 in both
]


def deepspeed_capacity(n, e, factor, k, floor):
    capacity = torch.ceil((n / e) * torch.tensor(factor * k)).to(torch.int64)
    return max(int(capacity), floor)


def main(ds_import, work):
    bad = 0
    for i, (b, t, e, factor, k, floor) in enumerate(CASES):
        spec = {"model_type": "gpt", "n_layer": 1, "n_embd": 8, "n_head": 2,
                "n_positions": t, "vocab_size": 16,
                "moe": {"num_experts": e, "k": k, "capacity_factor": factor,
                        "min_capacity": floor}}
        path = f"{work}/case{i}.json"
        with open(path, "w") as f:
            json.dump(spec, f)
        ir = subprocess.run([ds_import, "--spec", path, "--micro-batch", str(b)],
                            check=True, capture_output=True, text=True).stdout
        got = int(re.search(r"\^bb0\(%\w+: tensor<" + str(e) + r"x(\d+)x8xf32>", ir).group(1))
        want = deepspeed_capacity(b * t, e, factor, k, floor)
        ok = got == want
        bad += not ok
        print(f"N={b * t} E={e} capacity_factor={factor} k={k} "
              f"min_capacity={floor}: ds {got}, DeepSpeed {want} "
              f"{'ok' if ok else 'FAIL'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
