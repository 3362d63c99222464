#!/usr/bin/python3
"""A checkpoint in Hugging Face GPT-2's layout, made here without the
transformers package: the tensor names of GPT2LMHeadModel's state dict
(transformer.h.N.attn.c_attn.weight, ...) and its Conv1D weights stored
[in, out]. PyTorch evaluates GPT-2's forward from those tensors as Hugging
Face's code does (x @ W + b, q/k/v split on the last dim, gelu_new), so the
reference does not share ds's [out, in] layout.

  hf_gpt2.py prepare DIR   writes DIR/gpt2.json (the ds GPT spec of the same
                           model; gpt2-untied.json, the same with an
                           untied head; gpt2-inner64.json, another MLP
                           width), DIR/sgd.json, DIR/tokens.bin,
                           DIR/hf.safetensors (as save_pretrained writes it:
                           no lm_head, which GPT-2 ties to wte),
                           DIR/hf.pth (a torch.save'd state_dict with
                           lm_head.weight and the attn.bias mask buffers of
                           older checkpoints) and DIR/reference.json
                           (PyTorch's step-1 loss, in f64)
  hf_gpt2.py check DIR JSONL   compares JSONL's step-1 loss with it
  hf_gpt2.py eval16 DIR JSONL bf16|fp16   eval and training losses of a
                           run with frozen weights (lr 0) from
                           DIR/hf-wide.safetensors (wide()) against
                           PyTorch's no-grad forward doing the same 16-bit
                           casts
  hf_gpt2.py eval DIR JSONL LR   DeepSpeed's eval_batch: trains the model
                           from DIR/hf.safetensors with SGD at rate LR as
                           ds-train did (DIR/tokens.bin, sequential order)
                           and compares every eval_loss of JSONL with
                           PyTorch's no-grad loss at that step on batch k
                           of DIR/eval.bin (k = 0, 1, ... for the k-th eval)

Run with Debian's /usr/bin/python3 (python3-torch).
"""
import json
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from pt_vs_spec import write_safetensors  # noqa: E402

LAYERS, C, HEADS, VOCAB, T, BATCH = 2, 32, 4, 64, 16, 4
EPS = 1e-5
TOLERANCE = 1e-6
# A 16-bit forward computes each op in f32 from 16-bit inputs and rounds
# its result once, as gpt2_loss(dtype=...) does in f64. Where f32 and f64
# land on different sides of a rounding boundary, or a fused op rounds an
# inner value the emulation keeps, one activation moves by an ulp: bf16
# eval losses measured within 1.4e-7 of the emulation, fp16 within 1.5e-6
# (its finer ulp makes such flips more frequent), while the f64 loss of
# the same weights is at least 2.6e-5 (bf16) and 1.2e-5 (fp16) away. The
# tolerances sit between the two.
TOLERANCE16 = {"bf16": 1e-6, "fp16": 5e-6}


def wide(sd):
    """The 16-bit tests' weights: every matrix and bias (not the norms) 5
    times wider, so the logits are large enough for the loss to show
    16-bit rounding (about 1e-5 relative rather than 1e-6)."""
    return {k: v if ".ln_" in k else 5 * v for k, v in sd.items()}


def hf_state_dict(gen):
    def normal(*shape, mean=0.0, std=0.02):
        return mean + std * torch.randn(*shape, generator=gen)

    sd = {"transformer.wte.weight": normal(VOCAB, C),
          "transformer.wpe.weight": normal(T, C)}
    for i in range(LAYERS):
        p = f"transformer.h.{i}."
        sd[p + "ln_1.weight"] = normal(C, mean=1.0, std=0.1)
        sd[p + "ln_1.bias"] = normal(C)
        sd[p + "attn.c_attn.weight"] = normal(C, 3 * C)   # Conv1D: [in, out]
        sd[p + "attn.c_attn.bias"] = normal(3 * C)
        sd[p + "attn.c_proj.weight"] = normal(C, C)
        sd[p + "attn.c_proj.bias"] = normal(C)
        sd[p + "ln_2.weight"] = normal(C, mean=1.0, std=0.1)
        sd[p + "ln_2.bias"] = normal(C)
        sd[p + "mlp.c_fc.weight"] = normal(C, 4 * C)
        sd[p + "mlp.c_fc.bias"] = normal(4 * C)
        sd[p + "mlp.c_proj.weight"] = normal(4 * C, C)
        sd[p + "mlp.c_proj.bias"] = normal(C)
    sd["transformer.ln_f.weight"] = normal(C, mean=1.0, std=0.1)
    sd["transformer.ln_f.bias"] = normal(C)
    return sd


def conv1d(x, w, b):
    """transformers.pytorch_utils.Conv1D: addmm(b, x, w), w [in, out]."""
    return torch.addmm(b, x.reshape(-1, x.shape[-1]), w).view(
        *x.shape[:-1], w.shape[1])


def gpt2_loss(sd, ids, targets, dtype=None):
    """In f64; with `dtype` (bf16/f16), as a mixed-precision forward runs:
    parameters read in `dtype`, and each op of the model (embedding + add,
    layer_norm, linear with its bias, attention, gelu, residual add)
    computes from `dtype` inputs and rounds its result to `dtype` once;
    the loss takes the rounded logits in full precision."""
    def r(t):
        return t if dtype is None else t.to(dtype).double()

    sd = {k: r(v.double()) for k, v in sd.items()}
    B = ids.shape[0]
    h = r(sd["transformer.wte.weight"][ids] + sd["transformer.wpe.weight"][:T])
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    for i in range(LAYERS):
        p = f"transformer.h.{i}."
        a = r(F.layer_norm(h, (C,), sd[p + "ln_1.weight"], sd[p + "ln_1.bias"],
                           EPS))
        q, k, v = r(conv1d(a, sd[p + "attn.c_attn.weight"],
                           sd[p + "attn.c_attn.bias"])).split(C, dim=2)
        q, k, v = (t.view(B, T, HEADS, C // HEADS).transpose(1, 2)
                   for t in (q, k, v))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(C // HEADS)
        att = att.masked_fill(~causal, float("-inf")).softmax(-1)
        y = r(att @ v).transpose(1, 2).reshape(B, T, C)
        h = r(h + r(conv1d(y, sd[p + "attn.c_proj.weight"],
                           sd[p + "attn.c_proj.bias"])))
        m = r(F.layer_norm(h, (C,), sd[p + "ln_2.weight"], sd[p + "ln_2.bias"],
                           EPS))
        m = r(F.gelu(r(conv1d(m, sd[p + "mlp.c_fc.weight"],
                              sd[p + "mlp.c_fc.bias"])), approximate="tanh"))
        h = r(h + r(conv1d(m, sd[p + "mlp.c_proj.weight"],
                           sd[p + "mlp.c_proj.bias"])))
    h = r(F.layer_norm(h, (C,), sd["transformer.ln_f.weight"],
                       sd["transformer.ln_f.bias"], EPS))
    logits = r(h @ sd["transformer.wte.weight"].T)
    return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


def windows(tokens, first, count):
    """Samples first..first+count-1 in the sequential order of docs/data.md."""
    span = len(tokens) - T - 1
    starts = [(j * T) % span for j in range(first, first + count)]
    return (torch.tensor([tokens[s:s + T] for s in starts]),
            torch.tensor([tokens[s + 1:s + T + 1] for s in starts]))


def read_tokens(path):
    raw = open(path, "rb").read()
    return list(struct.unpack(f"<{len(raw) // 2}H", raw))


def evaluate(out, jsonl, lr):
    lines = [json.loads(line) for line in open(jsonl)]
    train, held_out = read_tokens(f"{out}/tokens.bin"), read_tokens(f"{out}/eval.bin")
    sd = {k: v.double().requires_grad_() for k, v in hf_state_dict(
        torch.Generator().manual_seed(5)).items()}
    worst, evals = 0.0, 0
    for line in lines:
        s = line["step"] - 1
        loss = gpt2_loss(sd, *windows(train, s * BATCH, BATCH))
        grads = torch.autograd.grad(loss, list(sd.values()))
        with torch.no_grad():
            for p, g in zip(sd.values(), grads):
                p -= float(lr) * g
        if "eval_loss" in line:
            with torch.no_grad():
                ref = gpt2_loss(sd, *windows(held_out, evals * BATCH, BATCH)).item()
            worst = max(worst, abs(line["eval_loss"] - ref) / ref)
            evals += 1
    ok = evals > 0 and worst <= TOLERANCE
    print(f"{evals} eval losses ds vs torch no-grad: max rel err {worst:.1e} "
          f"{'ok' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


def evaluate16(out, jsonl, dtype_name):
    """Frozen weights (lr 0): every eval_loss of JSONL is the 16-bit
    forward's. Checked against gpt2_loss in that dtype within TOLERANCE16
    and, to show the eval did run in 16 bits, farther than that from the
    f64 loss. The training losses' distance is printed too (not checked)."""
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
    lines = [json.loads(line) for line in open(jsonl)]
    train, held_out = read_tokens(f"{out}/tokens.bin"), read_tokens(f"{out}/eval.bin")
    sd = wide(hf_state_dict(torch.Generator().manual_seed(5)))
    worst = {"eval": 0.0, "train": 0.0}
    off32, evals = math.inf, 0
    for line in lines:
        s = line["step"] - 1
        batch = windows(train, s * BATCH, BATCH)
        ref = gpt2_loss(sd, *batch, dtype).item()
        worst["train"] = max(worst["train"], abs(line["loss"] - ref) / ref)
        if "eval_loss" in line:
            batch = windows(held_out, evals * BATCH, BATCH)
            ref = gpt2_loss(sd, *batch, dtype).item()
            ref32 = gpt2_loss(sd, *batch).item()
            worst["eval"] = max(worst["eval"], abs(line["eval_loss"] - ref) / ref)
            off32 = min(off32, abs(line["eval_loss"] - ref32) / ref32)
            evals += 1
    tol = TOLERANCE16[dtype_name]
    ok = evals > 0 and worst["eval"] <= tol < off32
    print(f"{evals} {dtype_name} eval losses vs torch no-grad in "
          f"{dtype_name}: max rel err {worst['eval']:.1e} (train losses "
          f"{worst['train']:.1e}; tolerance {tol:.0e}; vs f64 at least "
          f"{off32:.1e}) {'ok' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


def prepare(out):
    gen = torch.Generator().manual_seed(5)
    sd = hf_state_dict(gen)
    tokens = torch.randint(0, VOCAB, (400,), generator=gen).tolist()
    with open(f"{out}/tokens.bin", "wb") as f:
        f.write(struct.pack(f"<{len(tokens)}H", *tokens))
    spec = {"model_type": "gpt2", "n_layer": LAYERS, "n_embd": C,
            "n_head": HEADS, "n_positions": T, "vocab_size": VOCAB,
            "layer_norm_epsilon": EPS, "activation_function": "gelu_new"}
    with open(f"{out}/gpt2.json", "w") as f:
        json.dump(spec, f)
    # Untied: its lm_head.weight comes from wte, as GPT-2 ties them.
    with open(f"{out}/gpt2-untied.json", "w") as f:
        json.dump(dict(spec, tie_word_embeddings=False), f)
    # Another model: a shape the file does not have.
    with open(f"{out}/gpt2-inner64.json", "w") as f:
        json.dump(dict(spec, n_inner=64), f)
    with open(f"{out}/sgd.json", "w") as f:
        json.dump({"train_batch_size": BATCH,
                   "train_micro_batch_size_per_gpu": BATCH,
                   "gradient_clipping": 0,
                   "optimizer": {"type": "SGD", "params": {"lr": 0.1}}}, f)
    write_safetensors(f"{out}/hf.safetensors", sd)
    write_safetensors(f"{out}/hf-wide.safetensors", wide(sd))
    full = dict(sd)
    full["lm_head.weight"] = sd["transformer.wte.weight"]
    for i in range(LAYERS):
        full[f"transformer.h.{i}.attn.bias"] = torch.ones(T, T).tril().view(1, 1, T, T)
    torch.save(full, f"{out}/hf.pth")

    held_out = torch.randint(0, VOCAB, (300,), generator=gen).tolist()
    with open(f"{out}/eval.bin", "wb") as f:
        f.write(struct.pack(f"<{len(held_out)}H", *held_out))
    with open(f"{out}/reference.json", "w") as f:
        json.dump({"loss": gpt2_loss(sd, *windows(tokens, 0, BATCH)).item()}, f)


def check(out, jsonl):
    ref = json.load(open(f"{out}/reference.json"))["loss"]
    got = json.loads(open(jsonl).readline())["loss"]
    err = abs(got - ref) / abs(ref)
    ok = err <= TOLERANCE
    print(f"step-1 loss {got:.7f} vs PyTorch {ref:.7f}: rel err {err:.1e} "
          f"{'ok' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    {"prepare": prepare, "check": check, "eval": evaluate,
     "eval16": evaluate16}[sys.argv[1]](
        *sys.argv[2:])
