#!/usr/bin/python3
"""Data as .npy files: token corpora, and paired per-sample arrays for a
classifier and a regression, trained by ds-train and by the same PyTorch
loop (SGD, from the same weights, on the same samples).

  npy_data.py prepare DIR   writes DIR/tokens.bin and the same tokens as
                            DIR/tokens-{u2,u4,i4}.npy; bad files
                            (bad-*.npy); DIR/cls.json (an MLP classifier
                            spec), DIR/x.npy (float32 [N, 6]), DIR/y.npy
                            (int64 class labels [N]); DIR/reg.json (an MLP
                            regression) with DIR/reg/inputs.npy (float64)
                            and DIR/reg/targets.npy (float32 [N, 2]);
                            DIR/{cls,reg}.safetensors (initial weights),
                            DIR/sgd.json and DIR/{cls,reg}-reference.json
                            (PyTorch's losses over STEPS steps)
                            DIR/cls-eval/{inputs,targets}.npy (held-out
                            samples) and DIR/cls-eval-reference.json
                            (PyTorch's no-grad losses on them after every
                            EVAL_INTERVAL-th step)
  npy_data.py check JSONL REF [KEY]   compares the losses (or KEY, e.g.
                            eval_loss) of JSONL with REF's

Step s reads samples (s * B + j) mod N, j < B: the sequential order of
docs/data.md. Run with Debian's /usr/bin/python3 (python3-torch).
"""
import json
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from pt_vs_spec import write_safetensors  # noqa: E402

N, IN, HIDDEN, CLASSES, OUT, B, STEPS, LR = 20, 6, 16, 3, 2, 8, 6, 0.1
N_EVAL, EVAL_INTERVAL = 12, 2
TOLERANCE = 1e-5


def mlp(out, gen):
    model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.GELU(), nn.Linear(HIDDEN, out))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.3 * torch.randn(p.shape, generator=gen))
    return model


def train(model, x, y, loss_fn, held_out=None):
    """The losses of STEPS SGD steps, each on samples (s*B + j) mod N; with
    `held_out` (x, y), also the no-grad loss on its batch k (samples
    (k*B + j) mod its N) after every EVAL_INTERVAL-th step."""
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    losses, evals = [], []
    for s in range(STEPS):
        idx = [(s * B + j) % N for j in range(B)]
        loss = loss_fn(model(x[idx]), y[idx])
        losses.append(loss.item())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if held_out is not None and (s + 1) % EVAL_INTERVAL == 0:
            ex, ey = held_out
            k = len(evals)
            idx = [(k * B + j) % len(ex) for j in range(B)]
            with torch.no_grad():
                evals.append(loss_fn(model(ex[idx]), ey[idx]).item())
    return losses if held_out is None else evals


def save_weights(model, path):
    names = {"0": "layers.0", "2": "layers.1"}
    write_safetensors(path, {names[k.split(".")[0]] + "." + k.split(".")[1]: v
                             for k, v in model.state_dict().items()})


def prepare(out):
    gen = torch.Generator().manual_seed(11)
    tokens = torch.randint(0, 64, (300,), generator=gen).numpy()
    tokens.astype("<u2").tofile(f"{out}/tokens.bin")
    for kind in ("u2", "u4", "i4"):
        np.save(f"{out}/tokens-{kind}.npy", tokens.astype("<" + kind))
    np.save(f"{out}/bad-float-tokens.npy", tokens.astype("<f4"))
    np.save(f"{out}/bad-2d-tokens.npy", tokens.astype("<u2").reshape(30, 10))
    big = tokens.astype("<u2")
    big[250] = 64  # past gpt-tiny's vocab
    np.save(f"{out}/bad-vocab-tokens.npy", big)
    with open(f"{out}/bad-short-tokens.npy", "wb") as f:
        raw = open(f"{out}/tokens-u2.npy", "rb").read()
        f.write(raw[:-7])

    with open(f"{out}/sgd.json", "w") as f:
        json.dump({"train_batch_size": B, "train_micro_batch_size_per_gpu": B,
                   "gradient_clipping": 0,
                   "optimizer": {"type": "SGD", "params": {"lr": LR}}}, f)
    for name, out_dim, loss in (("cls", CLASSES, "cross_entropy"),
                                ("reg", OUT, "mse")):
        with open(f"{out}/{name}.json", "w") as f:
            json.dump({"model_type": "mlp", "sizes": [IN, HIDDEN, out_dim],
                       "activation": "gelu", "loss": loss}, f)

    x = torch.randn(N, IN, generator=gen)
    labels = torch.randint(0, CLASSES, (N,), generator=gen)
    np.save(f"{out}/x.npy", x.numpy().astype("<f4"))
    np.save(f"{out}/y.npy", labels.numpy().astype("<i8"))
    model = mlp(CLASSES, gen)
    save_weights(model, f"{out}/cls.safetensors")
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    with open(f"{out}/cls-reference.json", "w") as f:
        json.dump(train(model, x, labels, F.cross_entropy), f)
    # Held-out samples as --eval-data DIR: one NAME.npy per batch argument.
    os.makedirs(f"{out}/cls-eval", exist_ok=True)
    ex = torch.randn(N_EVAL, IN, generator=gen)
    ey = torch.randint(0, CLASSES, (N_EVAL,), generator=gen)
    np.save(f"{out}/cls-eval/inputs.npy", ex.numpy().astype("<f4"))
    np.save(f"{out}/cls-eval/targets.npy", ey.numpy().astype("<i8"))
    model.load_state_dict(initial)
    with open(f"{out}/cls-eval-reference.json", "w") as f:
        json.dump(train(model, x, labels, F.cross_entropy, (ex, ey)), f)

    os.makedirs(f"{out}/reg", exist_ok=True)
    xr = torch.randn(N, IN, generator=gen, dtype=torch.float64)
    yr = torch.randn(N, OUT, generator=gen)
    np.save(f"{out}/reg/inputs.npy", xr.numpy())
    np.save(f"{out}/reg/targets.npy", yr.numpy().astype("<f4"))
    model = mlp(OUT, gen)
    save_weights(model, f"{out}/reg.safetensors")
    with open(f"{out}/reg-reference.json", "w") as f:
        json.dump(train(model, xr.float(), yr, F.mse_loss), f)

    np.save(f"{out}/bad-y-rows.npy", labels.numpy()[:N - 1])
    np.save(f"{out}/bad-x-width.npy", x.numpy()[:, :IN - 1])
    np.save(f"{out}/bad-y-float.npy", labels.numpy().astype("<f4"))


def check(jsonl, ref, key="loss"):
    ref = json.load(open(ref))
    got = [json.loads(line)[key] for line in open(jsonl)
           if key in json.loads(line)]
    assert len(got) == len(ref), (len(got), len(ref))
    err = max(abs(a - b) / abs(b) for a, b in zip(got, ref))
    ok = err <= TOLERANCE
    print(f"{len(got)} {key}es ds vs torch: max rel err {err:.1e} "
          f"{'ok' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    {"prepare": prepare, "check": check}[sys.argv[1]](*sys.argv[2:])
