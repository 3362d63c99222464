#!/usr/bin/python3
"""Models no one wrote for ds, trained by ds-train and by the same PyTorch
loop from the same weights on the same batches; their losses must agree.

  byom.py prepare DIR MODEL   writes DIR/MODEL.pt (traced, with its batch
                              types in ds_inputs.json), DIR/tokens.bin,
                              DIR/adamw.json
                              and DIR/reference.json (PyTorch's losses over
                              STEPS steps of AdamW)
  byom.py check DIR           compares DIR/ds.jsonl with DIR/reference.json
  byom.py state-dict DIR MODEL  writes DIR/other.pth, a state_dict (saved
                              with torch.save) of MODEL.pt's weights times
                              0.9, and DIR/other.json, PyTorch's step-1
                              loss from those weights
  byom.py first DIR JSONL REF   compares the step-1 loss of JSONL with REF's
                              (DIR/reference.json or DIR/other.json); with
                              --differs, checks they differ instead

MODEL is one of:
  llama         a Llama-style decoder in plain PyTorch: RMSNorm (pow, mean,
                rsqrt), rotary embeddings from cos/sin buffers (slices, cat,
                neg of the halves), SwiGLU MLP, no biases, grouped-query
                attention (k/v heads repeated by expand + reshape), untied head
  llama-interleaved  the same with Meta's original rotary pairing: even and
                odd features (x[..., ::2], x[..., 1::2]) rotated together
  neox          GPT-NeoX / Pythia: parallel attention and MLP, fused qkv
                with biases, rotary on part of each head, forward(input_ids,
                labels)
  llama-xy      the same Llama with forward(x, y)
  llama-src-tgt the same with forward(src, tgt)
  encoder-causal      nn.TransformerEncoder (post-LN, GELU) with a float
                causal mask
  encoder-causal-bool the same with a bool causal mask, pre-LN
  encoder-padding     the same with a src_key_padding_mask that masks the
                last key positions of every sample
  decoder       nn.TransformerDecoder (post-LN, GELU): causal float
                tgt_mask on the self-attention, cross-attention to the
                embeddings as memory with a memory_key_padding_mask
  masked        masks computed from the input ids (aten::ne, aten::eq,
                aten::where, masked_fill with a data-dependent mask)

The batches follow the sequential order of docs/data.md. Run with Debian's
/usr/bin/python3 (python3-torch).
"""
import json
import math
import struct
import sys
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = 10
BATCH = 4
SEQ = 16
VOCAB = 64
NUM_TOKENS = 2000
LR = 3e-3
TOLERANCE = 1e-5


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotate_interleaved(x, cos, sin):
    """Meta's pairing: features (2i, 2i+1) rotate by angle i."""
    even, odd = x[..., ::2], x[..., 1::2]
    out = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)
    return out.flatten(-2)


class Attention(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, interleaved):
        super().__init__()
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads
        self.head_dim = dim // n_heads
        self.interleaved = interleaved
        self.wq = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, dim, bias=False)

    def rope(self, x, cos, sin):
        if self.interleaved:
            return rotate_interleaved(x, cos, sin)
        return x * cos + rotate_half(x) * sin

    def repeat_kv(self, x):
        B, H, T, D = x.shape
        rep = self.n_heads // self.n_kv_heads
        return x[:, :, None, :, :].expand(B, H, rep, T, D).reshape(B, H * rep, T, D)

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
        k, v = self.repeat_kv(k), self.repeat_kv(v)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        att = att.masked_fill(mask == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.wo(y.transpose(1, 2).reshape(B, T, -1))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class DecoderLayer(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, hidden, interleaved):
        super().__init__()
        self.attention_norm = RMSNorm(dim)
        self.attention = Attention(dim, n_heads, n_kv_heads, interleaved)
        self.ffn_norm = RMSNorm(dim)
        self.feed_forward = FeedForward(dim, hidden)

    def forward(self, x, cos, sin, mask):
        h = x + self.attention(self.attention_norm(x), cos, sin, mask)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    def __init__(self, vocab=VOCAB, dim=32, n_layers=2, n_heads=4, n_kv_heads=2,
                 hidden=48, max_seq=SEQ, interleaved=False):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(
            DecoderLayer(dim, n_heads, n_kv_heads, hidden, interleaved)
            for _ in range(n_layers))
        self.norm = RMSNorm(dim)
        self.output = nn.Linear(dim, vocab, bias=False)
        head_dim = dim // n_heads
        inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        angles = torch.outer(torch.arange(max_seq).float(), inv_freq)
        if not interleaved:
            angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)
        self.register_buffer("mask", torch.ones(max_seq, max_seq).tril(), persistent=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.05)

    def forward(self, input_ids, targets):
        B, T = input_ids.shape
        cos, sin, mask = self.cos[:T], self.sin[:T], self.mask[:T, :T]
        h = self.tok_embeddings(input_ids)
        for layer in self.layers:
            h = layer(h, cos, sin, mask)
        logits = self.output(self.norm(h))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class NeoXLayer(nn.Module):
    """GPT-NeoX / Pythia: attention and MLP in parallel on the same input,
    a fused query_key_value with biases, rotary on the first quarter of each
    head's features."""

    def __init__(self, dim, n_heads, rotary_dims):
        super().__init__()
        self.n_heads, self.head_dim, self.rot = n_heads, dim // n_heads, rotary_dims
        self.input_layernorm = nn.LayerNorm(dim)
        self.post_attention_layernorm = nn.LayerNorm(dim)
        self.query_key_value = nn.Linear(dim, 3 * dim)
        self.dense = nn.Linear(dim, dim)
        self.dense_h_to_4h = nn.Linear(dim, 4 * dim)
        self.dense_4h_to_h = nn.Linear(4 * dim, dim)

    def attention(self, x, cos, sin, mask):
        B, T, C = x.shape
        qkv = self.query_key_value(x).view(B, T, self.n_heads, 3 * self.head_dim)
        q = qkv[..., :self.head_dim].permute(0, 2, 1, 3)
        k = qkv[..., self.head_dim:2 * self.head_dim].permute(0, 2, 1, 3)
        v = qkv[..., 2 * self.head_dim:].permute(0, 2, 1, 3)
        q = torch.cat((q[..., :self.rot] * cos + rotate_half(q[..., :self.rot]) * sin,
                       q[..., self.rot:]), dim=-1)
        k = torch.cat((k[..., :self.rot] * cos + rotate_half(k[..., :self.rot]) * sin,
                       k[..., self.rot:]), dim=-1)
        att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        att = att.masked_fill(mask == 0, torch.finfo(att.dtype).min)
        y = torch.matmul(F.softmax(att, dim=-1), v)
        return self.dense(y.permute(0, 2, 1, 3).reshape(B, T, C))

    def forward(self, x, cos, sin, mask):
        mlp = self.dense_4h_to_h(F.gelu(self.dense_h_to_4h(self.post_attention_layernorm(x))))
        return x + self.attention(self.input_layernorm(x), cos, sin, mask) + mlp


class NeoX(nn.Module):
    def __init__(self, vocab=VOCAB, dim=32, n_heads=4, n_layers=2, max_seq=SEQ):
        super().__init__()
        rot = (dim // n_heads) // 4 * 2
        self.embed_in = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(NeoXLayer(dim, n_heads, rot) for _ in range(n_layers))
        self.final_layer_norm = nn.LayerNorm(dim)
        self.embed_out = nn.Linear(dim, vocab, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, rot, 2).float() / rot))
        angles = torch.outer(torch.arange(max_seq).float(), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)
        self.register_buffer("mask", torch.ones(max_seq, max_seq).tril(), persistent=False)

    def forward(self, input_ids, labels):
        T = input_ids.shape[1]
        h = self.embed_in(input_ids)
        for layer in self.layers:
            h = layer(h, self.cos[:T], self.sin[:T], self.mask[:T, :T])
        logits = self.embed_out(self.final_layer_norm(h))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))


class LlamaXY(Llama):
    """Batch arguments named as in much PyTorch code."""

    def forward(self, x, y):
        return super().forward(x, y)


class LlamaSrcTgt(Llama):
    """Batch arguments no default binds: ds-train --batch src=tokens
    --batch tgt=targets."""

    def forward(self, src, tgt):
        return super().forward(src, tgt)


class Encoder(nn.Module):
    """An encoder-only language model around nn.TransformerEncoder."""

    def __init__(self, mask_kind, norm_first, vocab=VOCAB, dim=32, n_heads=4,
                 n_layers=2, max_seq=SEQ):
        super().__init__()
        self.mask_kind = mask_kind
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_seq, dim)
        layer = nn.TransformerEncoderLayer(dim, n_heads, dim_feedforward=64, dropout=0.0,
                                           activation="gelu", batch_first=True,
                                           norm_first=norm_first)
        self.enc = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.head = nn.Linear(dim, vocab)

    def forward(self, input_ids, targets):
        B, T = input_ids.shape
        h = self.tok(input_ids) + self.pos(torch.arange(T))
        if self.mask_kind == "float":
            mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
            h = self.enc(h, mask=mask)
        elif self.mask_kind == "bool":
            mask = torch.ones(T, T, dtype=torch.bool).triu(1)
            h = self.enc(h, mask=mask)
        else:
            # The last quarter of every sample's keys is padding.
            padding = torch.arange(T).expand(B, T) >= T - T // 4
            h = self.enc(h, src_key_padding_mask=padding)
        logits = self.head(h)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class Decoder(nn.Module):
    """A language model around nn.TransformerDecoder, its memory the token
    embeddings (an encoder's output in a translation model)."""

    def __init__(self, vocab=VOCAB, dim=32, n_heads=4, n_layers=2, max_seq=SEQ):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_seq, dim)
        layer = nn.TransformerDecoderLayer(dim, n_heads, dim_feedforward=64, dropout=0.0,
                                           activation="gelu", batch_first=True)
        self.dec = nn.TransformerDecoder(layer, n_layers)
        self.head = nn.Linear(dim, vocab)

    def forward(self, input_ids, targets):
        B, T = input_ids.shape
        memory = self.tok(input_ids)
        h = memory + self.pos(torch.arange(T))
        causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        padding = torch.arange(T).expand(B, T) >= T - T // 4
        h = self.dec(h, memory, tgt_mask=causal, memory_key_padding_mask=padding)
        logits = self.head(h)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


PAD = 3  # a token of the stream (it follows 0), masked as padding


class MaskedLM(nn.Module):
    """Masks computed from the data, as models with padding build them:
    `keep = input_ids.ne(PAD)`; PAD positions' embeddings zeroed by
    torch.where; their keys masked with `keep == 0` through masked_fill
    (to finfo.min, as Hugging Face models do), on top of a causal mask."""

    def __init__(self, vocab=VOCAB, dim=32, n_heads=4, max_seq=SEQ):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, dim // n_heads
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_seq, dim)
        self.ln = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab)
        self.register_buffer("causal", torch.ones(max_seq, max_seq).tril(),
                             persistent=False)

    def forward(self, input_ids, targets):
        B, T = input_ids.shape
        keep = input_ids.ne(PAD)
        h = self.tok(input_ids) + self.pos(torch.arange(T))
        h = torch.where(keep.unsqueeze(-1), h, 0.0)
        q, k, v = self.qkv(self.ln(h)).split(h.shape[-1], dim=-1)
        q, k, v = (t.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
                   for t in (q, k, v))
        att = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        low = torch.finfo(att.dtype).min
        att = att.masked_fill(self.causal[:T, :T] == 0, low)
        att = att.masked_fill(keep.view(B, 1, 1, T) == 0, low)
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, -1)
        h = h + self.proj(y)
        logits = self.head(h)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


MODELS = {
    "llama": lambda: Llama(),
    "llama-interleaved": lambda: Llama(interleaved=True),
    "neox": lambda: NeoX(),
    "llama-xy": lambda: LlamaXY(),
    "llama-src-tgt": lambda: LlamaSrcTgt(),
    "encoder-causal": lambda: Encoder("float", norm_first=False),
    "encoder-causal-bool": lambda: Encoder("bool", norm_first=True),
    "encoder-padding": lambda: Encoder("padding", norm_first=False),
    "decoder": lambda: Decoder(),
    "masked": lambda: MaskedLM(),
}


def make_tokens():
    """A stream with something to learn: each token mostly follows from the
    one before, sometimes at random."""
    gen = torch.Generator().manual_seed(3)
    noise = torch.randint(0, VOCAB, (NUM_TOKENS,), generator=gen).tolist()
    coin = torch.rand(NUM_TOKENS, generator=gen).tolist()
    tokens = [0]
    for i in range(1, NUM_TOKENS):
        tokens.append(noise[i] if coin[i] < 0.2 else (5 * tokens[-1] + 3) % VOCAB)
    return tokens


def batch(tokens, step):
    """Step `step`'s samples in the sequential order of docs/data.md."""
    span = len(tokens) - SEQ - 1
    starts = [((step * BATCH + j) * SEQ) % span for j in range(BATCH)]
    ids = torch.tensor([tokens[s:s + SEQ] for s in starts])
    targets = torch.tensor([tokens[s + 1:s + SEQ + 1] for s in starts])
    return ids, targets


def write_data(out, tokens):
    """DIR/tokens.bin and the AdamW config of the PyTorch loop."""
    with open(f"{out}/tokens.bin", "wb") as f:
        f.write(struct.pack(f"<{len(tokens)}H", *tokens))
    with open(f"{out}/adamw.json", "w") as f:
        json.dump({"train_batch_size": BATCH,
                   "train_micro_batch_size_per_gpu": BATCH,
                   "gradient_clipping": 0,
                   "optimizer": {"type": "AdamW",
                                 "params": {"lr": LR, "weight_decay": 0.01}}}, f)


def train(out, params, loss_of, tokens):
    """STEPS steps of AdamW on `params`; the losses go to DIR/reference.json."""
    opt = torch.optim.AdamW(params, lr=LR, weight_decay=0.01)
    losses = []
    for step in range(STEPS):
        ids, targets = batch(tokens, step)
        loss = loss_of(ids, targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    with open(f"{out}/reference.json", "w") as f:
        json.dump({"losses": losses}, f)


def prepare(out, name):
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    warnings.filterwarnings("ignore", category=UserWarning)
    torch.manual_seed(0)
    model = MODELS[name]()
    tokens = make_tokens()
    write_data(out, tokens)

    example = batch(tokens, 0)
    traced = torch.jit.trace(model, example)
    inputs = [{"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}
              for t in example]
    traced.save(f"{out}/{name}.pt", _extra_files={"ds_inputs.json": json.dumps(inputs)})
    train(out, model.parameters(), model, tokens)


def check(out):
    ref = json.load(open(f"{out}/reference.json"))["losses"]
    got = [json.loads(line)["loss"] for line in open(f"{out}/ds.jsonl")
           if '"loss"' in line]
    if len(got) != len(ref):
        print(f"FAIL: {len(got)} ds losses, {len(ref)} PyTorch losses")
        sys.exit(1)
    worst = max(abs(a - b) / abs(b) for a, b in zip(got, ref))
    ok = worst <= TOLERANCE
    print(f"{len(ref)} losses ds vs torch: max rel err {worst:.1e} "
          f"{'ok' if ok else 'FAIL'} (first {got[0]:.6f} vs {ref[0]:.6f}, "
          f"last {got[-1]:.6f} vs {ref[-1]:.6f})")
    sys.exit(0 if ok else 1)


def state_dict(out, name):
    module = torch.jit.load(f"{out}/{name}.pt")
    weights = {n: p.detach() * 0.9 for n, p in module.named_parameters()}
    torch.save(weights, f"{out}/other.pth")
    with torch.no_grad():
        for n, p in module.named_parameters():
            p.copy_(weights[n])
        loss = module(*batch(make_tokens(), 0)).item()
    with open(f"{out}/other.json", "w") as f:
        json.dump({"losses": [loss]}, f)


def first(out, jsonl, ref, differs):
    want = json.load(open(ref))["losses"][0]
    got = json.loads(open(jsonl).readline())["loss"]
    err = abs(got - want) / abs(want)
    ok = err > 1e-3 if differs else err <= TOLERANCE
    print(f"step-1 loss {got:.6f} vs torch {want:.6f}: rel err {err:.1e} "
          f"{'ok' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    if sys.argv[1] == "prepare":
        prepare(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "state-dict":
        state_dict(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "first":
        first(sys.argv[2], sys.argv[3], sys.argv[4], "--differs" in sys.argv)
    else:
        check(sys.argv[2])
