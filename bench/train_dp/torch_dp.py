"""PyTorch data-parallel baseline of bench train_dp (Debian's python3-torch 1.13).

The GPT of bench/train_single/torch_train.py (same module, same init, same
WarmupLR schedule), trained by WORLD processes over gloo on this machine:

  ddp    DistributedDataParallel, full AdamW (foreach) on every rank
  zero1  DistributedDataParallel + ZeroRedundancyOptimizer(AdamW, foreach):
         optimizer state sharded over the ranks (ZeRO-1), updated
         parameters broadcast by their owners

Each step: zero_grad(set_to_none), forward, backward (DDP's bucketed
all-reduce), clip_grad_norm_, optimizer step. Rank r trains on the
contiguous block [r*B/WORLD, (r+1)*B/WORLD) of each global batch of B
random token rows (like ds-train --synthetic). Processes are started with
torch.multiprocessing (torchrun needs --redirects/--tee/--log_dir on Python
3.11), each pinned to THREADS threads; with RANK, WORLD_SIZE, MASTER_ADDR
and MASTER_PORT in the environment (a launcher such as ds-launch started one
process per rank, possibly on several hosts) it runs that one rank instead.

  python3 torch_dp.py MODE SPEC.json CONFIG.json THREADS STEPS OUT.jsonl

With "pipeline": {"activation_checkpoint_interval": N > 0} in the config
(ds's key for activation checkpointing) every block runs under
torch.utils.checkpoint.

Rank 0 writes one JSON line per step (step, loss, lr, grad_norm, step_ms,
peak_rss_bytes: rank 0's peak RSS so far):
step_ms is rank 0's wall time from before its batch is made to after the
optimizer step (DDP's all-reduce and ZeRO's broadcast make it wait for the
other ranks); the loss is the global-batch mean, all-reduced after the
timed region.
"""
import json
import os
import resource
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "train_single"))
from torch_train import GPT, warmup_lr  # noqa: E402  (the single-rank bench's module)


def worker(rank, world, port, mode, spec, cfg, threads, steps, out_path,
           addr="127.0.0.1"):
    torch.set_num_threads(threads)
    dist.init_process_group("gloo", init_method=f"tcp://{addr}:{port}",
                            rank=rank, world_size=world)
    B = cfg["train_batch_size"]
    micro = cfg["train_micro_batch_size_per_gpu"]
    assert B == micro * world, "one micro-batch per rank and step"
    T, V = spec["n_positions"], spec["vocab_size"]
    op = cfg["optimizer"]["params"]
    lr0 = op.get("lr", 1e-3)
    clip = cfg.get("gradient_clipping", 0.0)

    torch.manual_seed(spec.get("init_seed", 0))
    model = GPT(spec["n_layer"], spec["n_embd"], spec["n_head"], V, T,
                spec.get("n_inner"), spec.get("layer_norm_epsilon", 1e-5),
                spec.get("initializer_range", 0.02))
    model.train()
    # ds's activation checkpointing key for a model outside a pipeline:
    # every block recomputed in the backward.
    model.checkpoint_blocks = cfg.get("pipeline", {}).get(
        "activation_checkpoint_interval", 0) > 0
    # The model's buffers (additive float causal mask, positions) are
    # constants: no per-forward broadcast.
    ddp = torch.nn.parallel.DistributedDataParallel(
        model, broadcast_buffers=False, gradient_as_bucket_view=True)
    adamw = dict(lr=lr0, betas=tuple(op.get("betas", (0.9, 0.999))),
                 eps=op.get("eps", 1e-8),
                 weight_decay=op.get("weight_decay", 0.0), foreach=True)
    if mode == "ddp":
        opt = torch.optim.AdamW(ddp.parameters(), **adamw)
    elif mode == "zero1":
        from torch.distributed.optim import ZeroRedundancyOptimizer
        opt = ZeroRedundancyOptimizer(ddp.parameters(),
                                      optimizer_class=torch.optim.AdamW,
                                      **adamw)
    else:
        raise SystemExit(f"torch_dp.py: unknown mode {mode!r} (ddp, zero1)")

    gen = torch.Generator().manual_seed(1234)
    rows = []
    for s in range(1, steps + 1):
        t0 = time.perf_counter()
        tokens = torch.randint(0, V, (B, T + 1), generator=gen)
        mine = tokens[rank * micro:(rank + 1) * micro]
        idx, tgt = mine[:, :-1].contiguous(), mine[:, 1:].contiguous()
        lr = warmup_lr(cfg.get("scheduler", {}), lr0, s) \
            if "scheduler" in cfg else lr0
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad(set_to_none=True)
        loss = ddp(idx, tgt)
        loss.backward()
        norm = (torch.nn.utils.clip_grad_norm_(ddp.parameters(), clip)
                if clip > 0 else torch.zeros(()))
        opt.step()
        step_ms = (time.perf_counter() - t0) * 1e3
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        rows.append({"step": s, "loss": mean.item() / world, "lr": lr,
                     "grad_norm": float(norm), "step_ms": step_ms,
                     # ru_maxrss is in KiB on Linux.
                     "peak_rss_bytes": resource.getrusage(
                         resource.RUSAGE_SELF).ru_maxrss * 1024})
    if rank == 0:
        with open(out_path, "w") as out:
            for r in rows:
                out.write(json.dumps(r) + "\n")
    dist.barrier()
    # No destroy_process_group() and no interpreter teardown: torch 1.13's
    # gloo threads sometimes abort the process at exit ("terminate called
    # without an active exception", SIGABRT) after all the work is done.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def main():
    mode, spec_path, config_path, threads, steps, out_path = sys.argv[1:7]
    spec = json.load(open(spec_path))
    cfg = json.load(open(config_path))
    if "RANK" in os.environ and "MASTER_ADDR" in os.environ:
        # Started per rank by a launcher (ds-launch --hostfile: several
        # hosts); GLOO_SOCKET_IFNAME comes from the caller.
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]),
               int(os.environ["MASTER_PORT"]), mode, spec, cfg, int(threads),
               int(steps), out_path, os.environ["MASTER_ADDR"])
        return
    world = cfg["train_batch_size"] // (
        cfg["train_micro_batch_size_per_gpu"]
        * cfg.get("gradient_accumulation_steps", 1))
    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    mp.spawn(worker, nprocs=world, join=True,
             args=(world, port, mode, spec, cfg, int(threads), int(steps),
                   out_path))


if __name__ == "__main__":
    main()
