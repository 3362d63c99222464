#!/usr/bin/env python3
"""Which PyTorch 2.x models ds-import reads today (issue 41, item 1).

Builds each model with random weights (nothing downloaded), exports it by
torch.jit.trace (.pt) and by torch.export (.pt2), runs ds-import on each file
and prints a Markdown table: model x path -> ok, or the first line of the
error. Needs torch 2.x and transformers (an ignored virtualenv, e.g.
.venv-torch2); docs/models.md records its output.

  .venv-torch2/bin/python scripts/torch2-measure.py [--ds-import build/bin/ds-import] [--out DIR]
"""
import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH, SEQ, VOCAB = 2, 16, 64


def docs_gpt():
    """The docs' GPT (docs/models.md), as the TorchScript fixtures trace it."""
    path = os.path.join(ROOT, "test/Import/Inputs/make_fixtures.py")
    spec = importlib.util.spec_from_file_location("make_fixtures", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.GPT(n_layer=2, n_embd=32, n_head=4, vocab_size=VOCAB, n_positions=SEQ)


class SdpaAttention(nn.Module):
    """n_kv_head < n_head: grouped-query attention by SDPA's enable_gqa."""

    def __init__(self, C, n_head, n_kv_head=None):
        super().__init__()
        self.n_head = n_head
        self.n_kv_head = n_kv_head or n_head
        self.kv = self.n_kv_head * (C // n_head)
        self.c_attn = nn.Linear(C, C + 2 * self.kv)
        self.c_proj = nn.Linear(C, C)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split([C, self.kv, self.kv], dim=2)
        hd = C // self.n_head
        q = q.view(B, T, self.n_head, hd).transpose(1, 2)
        k = k.view(B, T, self.n_kv_head, hd).transpose(1, 2)
        v = v.view(B, T, self.n_kv_head, hd).transpose(1, 2)
        gqa = {"enable_gqa": True} if self.n_kv_head != self.n_head else {}
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, **gqa)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class NanoBlock(nn.Module):
    def __init__(self, C, n_head, n_kv_head=None):
        super().__init__()
        self.ln_1 = nn.LayerNorm(C)
        self.attn = SdpaAttention(C, n_head, n_kv_head)
        self.ln_2 = nn.LayerNorm(C)
        self.c_fc = nn.Linear(C, 4 * C)
        self.c_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x))))


class NanoGPT(nn.Module):
    """nanoGPT's model.py shape: SDPA attention, tied head."""

    def __init__(self, n_layer=2, C=32, n_head=4, vocab=VOCAB, block=SEQ,
                 n_kv_head=None):
        super().__init__()
        self.wte = nn.Embedding(vocab, C)
        self.wpe = nn.Embedding(block, C)
        self.h = nn.ModuleList(NanoBlock(C, n_head, n_kv_head)
                               for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(C)
        self.lm_head = nn.Linear(C, vocab, bias=False)
        self.wte.weight = self.lm_head.weight

    def forward(self, idx, targets):
        B, T = idx.size()
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class HFLoss(nn.Module):
    """A Hugging Face causal LM whose forward returns the loss."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, labels):
        return self.model(input_ids=input_ids, labels=labels).loss


def hf(name):
    import transformers as tr
    small = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                 num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                 max_position_embeddings=SEQ * 2)
    if name == "gpt2":
        cfg = tr.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4,
                            n_positions=SEQ * 2)
        model = tr.GPT2LMHeadModel(cfg)
    elif name == "llama3":
        cfg = tr.LlamaConfig(**small, rope_theta=500000.0, tie_word_embeddings=False)
        model = tr.LlamaForCausalLM(cfg)
    elif name == "qwen3":
        cfg = tr.Qwen3Config(**small, head_dim=8)
        model = tr.Qwen3ForCausalLM(cfg)
    elif name == "mistral":
        cfg = tr.MistralConfig(**small, sliding_window=None)
        model = tr.MistralForCausalLM(cfg)
    return HFLoss(model.eval())


MODELS = {
    "docs GPT": docs_gpt,
    "nanoGPT (SDPA)": NanoGPT,
    "HF GPT-2": lambda: hf("gpt2"),
    "HF Llama-3 style": lambda: hf("llama3"),
    "HF Qwen3": lambda: hf("qwen3"),
    "HF Mistral": lambda: hf("mistral"),
}


def first_line(text):
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line[:300]
    return "(no message)"


def last_error(exc):
    return first_line(f"{type(exc).__name__}: {exc}")


def ds_import(tool, path, out_dir):
    r = subprocess.run([tool, path, "-o", os.path.join(out_dir, "out.mlir")],
                       capture_output=True, text=True)
    if r.returncode == 0:
        return "ok", []
    # The distinct ops of an "unsupported ATen ops" list, in first-use order.
    ops = dict.fromkeys(re.findall(r"(aten\.[\w.]+) \(", r.stderr))
    short = first_line(re.sub(r"\(/[^)]*/([^/)]+)\)", r"(\1)", r.stderr))
    return short.replace(out_dir + "/", "")[:200], list(ops)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ds-import", default=os.path.join(ROOT, "build/bin/ds-import"))
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="torch2-measure-")
    os.makedirs(out, exist_ok=True)
    warnings.filterwarnings("ignore")
    import transformers
    print(f"torch {torch.__version__}, transformers {transformers.__version__}\n")
    print("| Model | Path | Export | ds-import |")
    print("|-------|------|--------|-----------|")
    unsupported = {}
    for name, make in MODELS.items():
        torch.manual_seed(0)
        model = make()
        ids = torch.randint(0, VOCAB, (BATCH, SEQ))
        targets = torch.randint(0, VOCAB, (BATCH, SEQ))
        slug = "".join(c if c.isalnum() else "_" for c in name).strip("_")
        inputs = [{"shape": [BATCH, SEQ], "dtype": "int64"}] * 2
        for kind in ("torch.jit.trace", "torch.export"):
            ext = "pt" if kind == "torch.jit.trace" else "pt2"
            path = os.path.join(out, f"{slug}.{ext}")
            try:
                if ext == "pt":
                    traced = torch.jit.trace(model, (ids, targets))
                    traced.save(path, _extra_files={"ds_inputs.json": json.dumps(inputs)})
                else:
                    ep = torch.export.export(model, (ids, targets))
                    torch.export.save(ep, path)
                exported = "ok"
            except Exception as e:  # noqa: BLE001 - measured, not handled
                print(f"| {name} | {kind} | {last_error(e)} | - |", flush=True)
                continue
            result, ops = ds_import(args.ds_import, path, out)
            result = result.replace("|", "\\|")
            print(f"| {name} | {kind} | {exported} | {result} |", flush=True)
            if ops:
                unsupported[f"{name} ({kind})"] = ops
    if unsupported:
        print("\nDistinct unsupported ops:\n")
        for name, ops in unsupported.items():
            print(f"- {name}: " + ", ".join(f"`{op}`" for op in ops))


if __name__ == "__main__":
    sys.exit(main())
