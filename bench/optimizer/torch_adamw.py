"""One torch.optim.AdamW step over PARAMS fp32 parameters in TENSORS equal
tensors, foreach=True and foreach=False; prints the best step time of each
mode: "foreach_best_s loop_best_s foreach_median_s loop_median_s".
usage: torch_adamw.py PARAMS TENSORS REPS THREADS"""
import statistics
import sys
import time

import torch

params, tensors, reps, threads = (int(a) for a in sys.argv[1:5])
torch.set_num_threads(threads)
sizes = [params // tensors + (t < params % tensors) for t in range(tensors)]
out = []
for foreach in (True, False):
    ps = [torch.empty(n).uniform_(-1, 1).requires_grad_() for n in sizes]
    for p in ps:
        p.grad = torch.empty_like(p).uniform_(-0.1, 0.1)
    opt = torch.optim.AdamW(ps, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.01, foreach=foreach)
    opt.step()  # warm-up: allocates the states
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        opt.step()
        times.append(time.perf_counter() - t)
    out.append((min(times), statistics.median(times)))
    del opt, ps
print(out[0][0], out[1][0], out[0][1], out[1][1])
