#!/usr/bin/python3
"""The traced GPT (make_fixtures.py's gpt.pt) and gpt-tiny.json trained by
ds-train from the same weights on the same batch must agree with each other
and with PyTorch autograd of the traced module.

  pt_vs_spec.py prepare DIR   reads DIR/gpt.pt; writes DIR/init.safetensors
                              (its weights), DIR/tokens.bin, DIR/sgd.json and
                              DIR/reference.json (PyTorch's loss, gradient
                              norm and gradients for step 1's batch, in f64)
  pt_vs_spec.py check DIR     compares DIR/{pt,spec}.jsonl and the weights
                              ds-train saved after one step,
                              DIR/{pt,spec}.safetensors, with the reference

One SGD step with a large rate and no momentum, decay or clipping makes the
saved weights p - lr * g, so (init - saved) / lr recovers every gradient ds
computed (to ~1e-7 relative: lr * g dominates p) without a way to export
gradients from ds-train. Prints one line per comparison; exit status 1 if any
exceeds TOLERANCE. Run with Debian's /usr/bin/python3 (python3-torch).
"""
import json
import struct
import sys

LR = 1000.0
MICRO_BATCH = 2          # the batch gpt.pt was traced with
TOLERANCE = 1e-5
NUM_TOKENS = 100


def write_safetensors(path, tensors):
    """tensors: {name: torch tensor}, written as F32 in the safetensors layout:
    u64 header length, JSON header, raw little-endian data."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = t.detach().float().contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (path, name, info["dtype"])
        begin, end = info["data_offsets"]
        values = struct.unpack(f"<{(end - begin) // 4}f",
                               raw[8 + n + begin:8 + n + end])
        out[name] = values
    return out


def first_batch(tokens, seq_len):
    import torch
    """Samples 0..MICRO_BATCH-1 of step 0 in the sequential order of
    docs/data.md: sample j starts at (j * T) mod (N - T - 1)."""
    span = len(tokens) - seq_len - 1
    starts = [(j * seq_len) % span for j in range(MICRO_BATCH)]
    ids = torch.tensor([tokens[s:s + seq_len] for s in starts])
    targets = torch.tensor([tokens[s + 1:s + seq_len + 1] for s in starts])
    return ids, targets


def prepare(out):
    import torch
    module = torch.jit.load(f"{out}/gpt.pt")
    params = dict(module.named_parameters())  # the tied head appears once
    write_safetensors(f"{out}/init.safetensors", params)
    vocab, seq_len = params["wte.weight"].shape[0], params["wpe.weight"].shape[0]

    gen = torch.Generator().manual_seed(3)
    tokens = torch.randint(0, vocab, (NUM_TOKENS,), generator=gen).tolist()
    with open(f"{out}/tokens.bin", "wb") as f:
        f.write(struct.pack(f"<{len(tokens)}H", *tokens))
    with open(f"{out}/sgd.json", "w") as f:
        # Clipping off (DeepSpeed's default clips at 1.0): the weights must
        # move by exactly lr * g.
        json.dump({"train_batch_size": MICRO_BATCH,
                   "train_micro_batch_size_per_gpu": MICRO_BATCH,
                   "gradient_clipping": 0,
                   "optimizer": {"type": "SGD", "params": {"lr": LR}}}, f)

    module = module.double()
    ids, targets = first_batch(tokens, seq_len)
    loss = module(ids, targets)
    loss.backward()
    grads = {n: p.grad for n, p in module.named_parameters()}
    norm = torch.sqrt(sum((g * g).sum() for g in grads.values()))
    with open(f"{out}/reference.json", "w") as f:
        json.dump({"loss": loss.item(), "grad_norm": norm.item(),
                   "grads": {n: g.flatten().tolist() for n, g in grads.items()}},
                  f)


def rel(a, b):
    return abs(a - b) / abs(b)


def check(out):
    """Without torch: the comparison needs no autograd, and importing torch
    costs seconds."""
    ref = json.load(open(f"{out}/reference.json"))
    init = read_safetensors(f"{out}/init.safetensors")
    assert set(ref["grads"]) == set(init), "reference and weights name different parameters"
    metrics, grads = {"torch": ref}, {"torch": ref["grads"]}
    for name in ("pt", "spec"):
        metrics[name] = json.loads(open(f"{out}/{name}.jsonl").readline())
        saved = read_safetensors(f"{out}/{name}.safetensors")
        grads[name] = {n: [(p - q) / LR for p, q in zip(init[n], saved[n])]
                       for n in init}

    failed = False

    def report(what, err):
        nonlocal failed
        ok = err <= TOLERANCE
        failed |= not ok
        print(f"{what}: max rel err {err:.1e} {'ok' if ok else 'FAIL'}")

    pairs = [("pt", "torch"), ("spec", "torch"), ("pt", "spec")]
    for key in ("loss", "grad_norm"):
        for a, b in pairs:
            report(f"{key} {a} vs {b}",
                   abs(metrics[a][key] - metrics[b][key]) / abs(ref[key]))
    for a, b in pairs:
        # Per tensor, relative to the tensor's largest reference gradient.
        worst = max(max(abs(x - y) for x, y in zip(grads[a][n], grads[b][n])) /
                    max(abs(x) for x in ref["grads"][n]) for n in init)
        report(f"gradients ({len(init)} tensors) {a} vs {b}", worst)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    {"prepare": prepare, "check": check}[sys.argv[1]](sys.argv[2])
