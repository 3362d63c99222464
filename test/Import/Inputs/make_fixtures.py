#!/usr/bin/python3
"""Writes the TorchScript fixtures of the test/Import tests into OUT_DIR
(all of them, or those named after it: make_fixtures.py OUT_DIR gpt mlp).

  gpt.pt          the GPT of docs/models.md at the gpt-tiny.json sizes, traced
  mlp.pt          the MLP of docs/models.md at the mlp.json sizes, scripted
  unsupported.pt  a model whose forward uses ops ds cannot import
  mlp-bare.pt     mlp.pt without the recorded input types

Each file records its batch arguments in the extra file ds_inputs.json, which
ds-import reads when --inputs is not given. Run with Debian's /usr/bin/python3
(the only interpreter python3-torch installs into).
"""
import json
import warnings
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


# The GPT of docs/models.md, verbatim.
class CausalSelfAttention(nn.Module):
    def __init__(self, C, n_head, attn_pdrop, resid_pdrop):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        self.attn_drop = nn.Dropout(attn_pdrop)
        self.resid_drop = nn.Dropout(resid_pdrop)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.n_head)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        att = att.masked_fill(~causal, float("-inf"))
        att = self.attn_drop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.resid_drop(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, C, inner, act, resid_pdrop):
        super().__init__()
        self.c_fc = nn.Linear(C, inner)
        self.c_proj = nn.Linear(inner, C)
        self.act = act
        self.drop = nn.Dropout(resid_pdrop)

    def forward(self, x):
        return self.drop(self.c_proj(self.act(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, C, n_head, inner, act, eps, attn_pdrop, resid_pdrop):
        super().__init__()
        self.ln_1 = nn.LayerNorm(C, eps=eps)
        self.attn = CausalSelfAttention(C, n_head, attn_pdrop, resid_pdrop)
        self.ln_2 = nn.LayerNorm(C, eps=eps)
        self.mlp = MLP(C, inner, act, resid_pdrop)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, n_layer, n_embd, n_head, vocab_size, n_positions,
                 n_inner=None, layer_norm_epsilon=1e-5, act=nn.GELU(),
                 embd_pdrop=0.0, attn_pdrop=0.0, resid_pdrop=0.0,
                 initializer_range=0.02):
        super().__init__()
        C, inner = n_embd, n_inner or 4 * n_embd
        self.wte = nn.Embedding(vocab_size, C)
        self.wpe = nn.Embedding(n_positions, C)
        self.drop = nn.Dropout(embd_pdrop)
        self.h = nn.ModuleList(
            Block(C, n_head, inner, act, layer_norm_epsilon, attn_pdrop, resid_pdrop)
            for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(C, eps=layer_norm_epsilon)
        self.lm_head = nn.Linear(C, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, initializer_range)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, input_ids, targets):
        B, T = input_ids.shape
        pos = torch.arange(T)
        x = self.drop(self.wte(input_ids) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


# The MLP of docs/models.md.
class MLPModel(nn.Module):
    def __init__(self, sizes, act):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))
        self.act = act

    def forward(self, inputs, targets):
        x = inputs
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i + 1 < len(self.layers):
                x = self.act(x)
        return F.cross_entropy(x, targets)


class Unsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, inputs, targets):
        x = torch.cumsum(self.fc(inputs), dim=1)
        x = torch.erfinv(torch.tanh(x))
        return F.mse_loss(x, targets)


def save(module, example, path, record_inputs=True):
    if not record_inputs:
        module.save(path)
        return
    inputs = [{"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}
              for t in example]
    module.save(path, _extra_files={"ds_inputs.json": json.dumps(inputs)})


def main(out_dir, names):
    # The trace turns C // n_head into a constant, as intended here.
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    torch.manual_seed(0)
    if "gpt" in names:
        make_gpt(out_dir)
    if "mlp" in names:
        make_mlp(out_dir)
    if "unsupported" in names:
        make_unsupported(out_dir)


def make_gpt(out_dir):
    gpt = GPT(n_layer=2, n_embd=16, n_head=2, vocab_size=64, n_positions=8)
    ids = torch.randint(0, 64, (2, 8))
    save(torch.jit.trace(gpt, (ids, torch.roll(ids, -1, 1))), (ids, ids),
         f"{out_dir}/gpt.pt")


def make_mlp(out_dir):
    mlp = MLPModel([32, 64, 64, 10], nn.GELU())
    x, y = torch.randn(4, 32), torch.randint(0, 10, (4,))
    save(torch.jit.script(mlp), (x, y), f"{out_dir}/mlp.pt")
    save(torch.jit.script(mlp), (x, y), f"{out_dir}/mlp-bare.pt", record_inputs=False)


def make_unsupported(out_dir):
    bad = Unsupported()
    x, y = torch.randn(2, 8), torch.randn(2, 8)
    save(torch.jit.trace(bad, (x, y)), (x, y), f"{out_dir}/unsupported.pt")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or ["gpt", "mlp", "unsupported"])
