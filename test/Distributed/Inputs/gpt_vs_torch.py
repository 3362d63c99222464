#!/usr/bin/python3
"""A GPT spec at its full size trained in PyTorch (f32), for comparing with
ds-train on the same weights and batches.

  gpt_vs_torch.py prepare DIR SPEC SEQ STEPS
      builds the GPT of docs/models.md (test/Import/Inputs/make_fixtures.py)
      at SPEC's sizes with n_positions SEQ, writes its initial weights to
      DIR/init.safetensors (streamed: one tensor in memory at a time beyond
      the model), DIR/tokens.bin, and trains STEPS AdamW steps of 2
      sequences (no clipping, weight decay 0.01) in PyTorch, writing the
      losses to DIR/reference.json
  gpt_vs_torch.py check DIR JSONL TOL [--grad-norms]
      compares JSONL's losses (and gradient norms) with DIR/reference.json
      (relative TOL)

Run with Debian's /usr/bin/python3 (python3-torch).
"""
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Import", "Inputs"))
from make_fixtures import GPT  # noqa: E402

BATCH = 2
LR = 1e-4
NUM_TOKENS = 4096


def write_safetensors(path, tensors):
    header, offset = {}, 0
    for name, t in tensors.items():
        n = t.numel() * 4
        header[name] = {"dtype": "F32", "shape": list(t.shape),
                        "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for t in tensors.values():
            f.write(t.detach().float().contiguous().numpy().tobytes())


def batch(tokens, step, seq):
    """Step `step`'s samples in the sequential order of docs/data.md."""
    span = len(tokens) - seq - 1
    starts = [((step * BATCH + j) * seq) % span for j in range(BATCH)]
    return (torch.tensor([tokens[s:s + seq] for s in starts]),
            torch.tensor([tokens[s + 1:s + seq + 1] for s in starts]))


def prepare(out, spec_path, seq, steps):
    spec = json.load(open(spec_path))
    torch.manual_seed(0)
    model = GPT(spec["n_layer"], spec["n_embd"], spec["n_head"],
                spec["vocab_size"], seq,
                layer_norm_epsilon=spec.get("layer_norm_epsilon", 1e-5))
    # The tied head is wte: one tensor, under its spec name.
    write_safetensors(f"{out}/init.safetensors", dict(model.named_parameters()))
    gen = torch.Generator().manual_seed(3)
    tokens = torch.randint(0, spec["vocab_size"], (NUM_TOKENS,),
                           generator=gen).tolist()
    with open(f"{out}/tokens.bin", "wb") as f:
        f.write(struct.pack(f"<{len(tokens)}H", *tokens))
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    losses, norms = [], []
    for step in range(steps):
        loss = model(*batch(tokens, step, seq))
        opt.zero_grad()
        loss.backward()
        # The global gradient norm, in f64: what ds reports as grad_norm.
        norms.append(sum(p.grad.double().square().sum().item()
                         for p in model.parameters()) ** 0.5)
        opt.step()
        losses.append(loss.item())
    json.dump({"losses": losses, "grad_norms": norms, "parameters":
               sum(p.numel() for p in model.parameters())},
              open(f"{out}/reference.json", "w"))


def check(out, jsonl, tol, grad_norms=False):
    ref = json.load(open(f"{out}/reference.json"))
    got = [json.loads(line)["loss"] for line in open(jsonl) if '"loss"' in line]
    if len(got) != len(ref["losses"]):
        sys.exit(f"{len(got)} ds losses, {len(ref['losses'])} PyTorch losses")
    worst = max(abs(a - b) / abs(b) for a, b in zip(got, ref["losses"]))
    ok = worst <= tol
    print(f"{ref['parameters']} parameters, {len(got)} losses ds vs torch: "
          f"max rel err {worst:.1e} {'ok' if ok else 'FAIL'} "
          f"({', '.join(f'{a:.6f} vs {b:.6f}' for a, b in zip(got, ref['losses']))})")
    if grad_norms:
        norms = [json.loads(line)["grad_norm"] for line in open(jsonl)
                 if '"grad_norm"' in line]
        if len(norms) != len(ref["grad_norms"]):
            sys.exit(f"{jsonl}: {len(norms)} gradient norms, the reference "
                     f"has {len(ref['grad_norms'])}")
        bad = max(abs(a - b) / abs(b) for a, b in zip(norms, ref["grad_norms"]))
        ok &= bad <= tol
        print(f"{len(norms)} gradient norms ds vs torch: max rel err "
              f"{bad:.1e} {'ok' if bad <= tol else 'FAIL'} "
              f"({', '.join(f'{a:.6f} vs {b:.6f}' for a, b in zip(norms, ref['grad_norms']))})")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    if sys.argv[1] == "prepare":
        prepare(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        check(sys.argv[2], sys.argv[3], float(sys.argv[4]),
              "--grad-norms" in sys.argv[5:])
