#!/usr/bin/python3
"""A Llama-family spec (model_type llama, mistral or qwen2) trained by
ds-train and by a PyTorch model written here from Hugging Face's formulas,
from the same weights on the same batches; their losses must agree.

  llama_spec.py prepare DIR SPEC   writes DIR/init.safetensors (random
                                   weights under Hugging Face's names),
                                   DIR/tokens.bin, DIR/adamw.json and
                                   DIR/reference.json (PyTorch's losses over
                                   byom.py's AdamW steps, in f64)
  llama_spec.py check DIR          compares DIR/ds.jsonl with the reference

The tokens, batches (T = byom.SEQ: the spec's max_position_embeddings must
equal it), optimizer loop and check are byom.py's.

The model reads only the spec's sizes; everything it computes is its own:
RMSNorm x * rsqrt(mean(x^2) + eps) * w, rotary embeddings by rotate_half
with inv_freq = theta^(-2i/D), k/v heads repeated by expand + reshape,
a causal softmax attention, SwiGLU down(silu(gate x) * up x). Norm weights
and biases are random too, so a misplaced one changes the loss. Run with
Debian's /usr/bin/python3 (python3-torch).
"""
import json
import math
import sys

import torch
import torch.nn.functional as F

import byom
from pt_vs_spec import write_safetensors


def make_weights(cfg, gen):
    C, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads", H)
    D = cfg.get("head_dim", C // H)
    family = cfg["model_type"]
    qkv_bias = family == "qwen2" or cfg.get("attention_bias", False)
    o_bias = family == "llama" and cfg.get("attention_bias", False)

    def normal(*shape, std=0.05, mean=0.0):
        return mean + std * torch.randn(*shape, generator=gen, dtype=torch.float64)

    w = {"model.embed_tokens.weight": normal(V, C, std=0.5)}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        for name, out, inp, bias in (("self_attn.q_proj", H * D, C, qkv_bias),
                                     ("self_attn.k_proj", KV * D, C, qkv_bias),
                                     ("self_attn.v_proj", KV * D, C, qkv_bias),
                                     ("self_attn.o_proj", C, H * D, o_bias),
                                     ("mlp.gate_proj", I, C, False),
                                     ("mlp.up_proj", I, C, False),
                                     ("mlp.down_proj", C, I, False)):
            w[p + name + ".weight"] = normal(out, inp, std=1 / math.sqrt(inp))
            if bias:
                w[p + name + ".bias"] = normal(out, std=0.1)
        w[p + "input_layernorm.weight"] = normal(C, std=0.1, mean=1.0)
        w[p + "post_attention_layernorm.weight"] = normal(C, std=0.1, mean=1.0)
    w["model.norm.weight"] = normal(C, std=0.1, mean=1.0)
    if not cfg.get("tie_word_embeddings", False):
        w["lm_head.weight"] = normal(V, C, std=0.2)
    # Rounded to f32 here, so both sides start from the file's values.
    return {n: t.float().double().requires_grad_() for n, t in w.items()}


def loss_of(cfg, w, ids, targets):
    C, H = cfg["hidden_size"], cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads", H)
    D = cfg.get("head_dim", C // H)
    eps = cfg.get("rms_norm_eps", 1e-6)
    theta = cfg.get("rope_theta", 10000.0)
    B, T = ids.shape

    def rms_norm(x, weight):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight

    def linear(x, name):
        return F.linear(x, w[name + ".weight"], w.get(name + ".bias"))

    def rotate_half(x):
        return torch.cat((-x[..., D // 2:], x[..., :D // 2]), dim=-1)

    def repeat_kv(x):
        rep = H // KV
        return x[:, :, None].expand(B, KV, rep, T, D).reshape(B, H, T, D)

    inv_freq = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    causal = torch.ones(T, T, dtype=torch.bool).tril()

    h = w["model.embed_tokens.weight"][ids]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        x = rms_norm(h, w[p + "input_layernorm.weight"])
        q = linear(x, p + "self_attn.q_proj").view(B, T, H, D).transpose(1, 2)
        k = linear(x, p + "self_attn.k_proj").view(B, T, KV, D).transpose(1, 2)
        v = linear(x, p + "self_attn.v_proj").view(B, T, KV, D).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = repeat_kv(k), repeat_kv(v)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D)
        att = att.masked_fill(~causal, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, H * D)
        h = h + linear(y, p + "self_attn.o_proj")
        x = rms_norm(h, w[p + "post_attention_layernorm.weight"])
        mlp = F.silu(linear(x, p + "mlp.gate_proj")) * linear(x, p + "mlp.up_proj")
        h = h + F.linear(mlp, w[p + "mlp.down_proj.weight"])
    h = rms_norm(h, w["model.norm.weight"])
    head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    logits = F.linear(h, head)
    return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def prepare(out, spec):
    cfg = json.load(open(spec))
    assert cfg["max_position_embeddings"] == byom.SEQ, "byom.py's batches are SEQ long"
    assert cfg["vocab_size"] == byom.VOCAB, "byom.py's tokens are < VOCAB"
    w = make_weights(cfg, torch.Generator().manual_seed(5))
    write_safetensors(f"{out}/init.safetensors", w)
    tokens = byom.make_tokens()
    byom.write_data(out, tokens)
    byom.train(out, list(w.values()),
               lambda ids, targets: loss_of(cfg, w, ids, targets), tokens)


if __name__ == "__main__":
    if sys.argv[1] == "prepare":
        prepare(sys.argv[2], sys.argv[3])
    else:
        byom.check(sys.argv[2])
