"""PyTorch baseline of bench train_single: eager (Debian's python3-torch
1.13, on OpenBLAS like ds), or with `compile` under torch 2.x,
torch.compile's Inductor (its own fused C++ kernels around MKL/oneDNN
products): the strongest CPU baseline PyPI offers.

Trains the GPT of docs/models.md ("What a GPT spec builds, as PyTorch":
pre-LN GPT-2 blocks, causal attention, exact GELU, tied LM head, mean
cross-entropy) from the same spec and ds_config.json as ds-train, with an
ordinary eager loop: zero_grad(set_to_none=True), forward, backward,
clip_grad_norm_, AdamW (foreach) step, the config's WarmupLR schedule.
Random tokens each step, like ds-train --synthetic.

  python3 torch_train.py SPEC.json CONFIG.json THREADS STEPS OUT.jsonl [compile]

With the config's bf16.enabled, the forward runs under CPU autocast to
bfloat16 (f32 parameters and optimizer, bf16 matrix products on oneDNN):
eager PyTorch's mixed precision on a CPU.

writes one JSON line per step (step, loss, lr, grad_norm, step_ms), with
step_ms timed the way ds-train times its steps: from before the batch is
made to after the optimizer step.
"""
import json
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint


class CausalSelfAttention(nn.Module):
    def __init__(self, C, n_head, T):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(C, 3 * C)  # q, k, v stacked on dim 0
        self.c_proj = nn.Linear(C, C)
        # Additive causal mask (0 / -inf), made once, like ds's constant.
        self.register_buffer(
            "mask", torch.full((T, T), float("-inf")).triu(1), persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        hd = C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, hd).transpose(1, 2)
        k = k.view(B, T, self.n_head, hd).transpose(1, 2)
        v = v.view(B, T, self.n_head, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hd) + self.mask[:T, :T]
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, C, inner):
        super().__init__()
        self.c_fc = nn.Linear(C, inner)
        self.c_proj = nn.Linear(inner, C)
        self.act = nn.GELU()  # exact (erf), "activation_function": "gelu"

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, C, n_head, inner, eps, T):
        super().__init__()
        self.ln_1 = nn.LayerNorm(C, eps=eps)
        self.attn = CausalSelfAttention(C, n_head, T)
        self.ln_2 = nn.LayerNorm(C, eps=eps)
        self.mlp = MLP(C, inner)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, n_layer, n_embd, n_head, vocab_size, n_positions,
                 n_inner=None, layer_norm_epsilon=1e-5, initializer_range=0.02):
        super().__init__()
        C, inner = n_embd, n_inner or 4 * n_embd
        self.wte = nn.Embedding(vocab_size, C)
        self.wpe = nn.Embedding(n_positions, C)
        self.h = nn.ModuleList(
            Block(C, n_head, inner, layer_norm_epsilon, n_positions)
            for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(C, eps=layer_norm_epsilon)
        self.lm_head = nn.Linear(C, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tie_word_embeddings
        self.register_buffer("pos", torch.arange(n_positions), persistent=False)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, initializer_range)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, input_ids, targets):
        B, T = input_ids.shape
        x = self.wte(input_ids) + self.wpe(self.pos[:T])
        for block in self.h:
            # checkpoint_blocks (set by torch_dp.py for a config with
            # activation checkpointing): keep each block's input only.
            if getattr(self, "checkpoint_blocks", False):
                x = torch.utils.checkpoint.checkpoint(block, x,
                                                      use_reentrant=False)
            else:
                x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def warmup_lr(sched, opt_lr, step):
    """DeepSpeed's WarmupLR at 1-based optimizer step `step` (linear or log)."""
    p = sched.get("params", {})
    lo = p.get("warmup_min_lr", 0.0)
    hi = p.get("warmup_max_lr", opt_lr)
    n = p.get("warmup_num_steps", 1000)
    it = step - 1  # DeepSpeed's last_batch_iteration during that step
    if it < n:
        if p.get("warmup_type", "log") == "linear":
            gamma = it / n
        else:
            gamma = math.log(it + 1) / math.log(n)
    else:
        gamma = 1.0
    return lo + (hi - lo) * gamma


def main():
    spec_path, config_path, threads, steps, out_path = sys.argv[1:6]
    compiled = sys.argv[6:7] == ["compile"]
    threads, steps = int(threads), int(steps)
    torch.set_num_threads(threads)
    spec = json.load(open(spec_path))
    cfg = json.load(open(config_path))
    assert spec["model_type"] in ("gpt", "gpt2")
    assert spec.get("activation_function", "gelu") == "gelu"
    assert spec.get("tie_word_embeddings", True)
    B = cfg["train_micro_batch_size_per_gpu"]
    assert cfg.get("train_batch_size", B) == B, "one micro-batch per step"
    T, V = spec["n_positions"], spec["vocab_size"]
    opt_cfg = cfg["optimizer"]
    assert opt_cfg["type"].lower() == "adamw"
    op = opt_cfg["params"]
    clip = cfg.get("gradient_clipping", 0.0)

    torch.manual_seed(spec.get("init_seed", 0))
    model = GPT(spec["n_layer"], spec["n_embd"], spec["n_head"], V, T,
                spec.get("n_inner"), spec.get("layer_norm_epsilon", 1e-5),
                spec.get("initializer_range", 0.02))
    model.train()
    step_model = torch.compile(model) if compiled else model
    opt = torch.optim.AdamW(model.parameters(), lr=op.get("lr", 1e-3),
                            betas=tuple(op.get("betas", (0.9, 0.999))),
                            eps=op.get("eps", 1e-8),
                            weight_decay=op.get("weight_decay", 0.0),
                            foreach=True)
    bf16 = cfg.get("bf16", {}).get("enabled", False)
    gen = torch.Generator().manual_seed(1234)
    with open(out_path, "w") as out:
        for s in range(1, steps + 1):
            t0 = time.perf_counter()
            tokens = torch.randint(0, V, (B, T + 1), generator=gen)
            idx, tgt = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
            lr = warmup_lr(cfg.get("scheduler", {}), op.get("lr", 1e-3), s) \
                if "scheduler" in cfg else op.get("lr", 1e-3)
            for g in opt.param_groups:
                g["lr"] = lr
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = step_model(idx, tgt)
            loss.backward()
            norm = (torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
                    if clip > 0 else torch.zeros(()))
            opt.step()
            step_ms = (time.perf_counter() - t0) * 1e3
            out.write(json.dumps({"step": s, "loss": loss.item(), "lr": lr,
                                  "grad_norm": float(norm),
                                  "step_ms": step_ms}) + "\n")


if __name__ == "__main__":
    main()
