#!/usr/bin/env python3
"""Makes TorchScript files from torch 2.x (torch.jit.trace) of the .pt2
fixtures' models, for ds-import built against LibTorch 2.x (run with torch
2.x, e.g. from the ignored virtualenv .venv-torch2):

  .venv-torch2/bin/python test/Import/Inputs/torch2/make_torchscript.py OUT [NAME...]

For each model NAME (default: all of nanogpt-sdpa, nanogpt-gqa, hf-gpt2,
hf-llama, hf-qwen3, hf-mistral: make_fixtures.py's modules, which it
exports to .pt2): NAME.pt (torch.jit.trace of a module whose forward returns the loss,
batch types in ds_inputs.json) and NAME.reference.json (the losses of STEPS
AdamW steps of the same module in torch, with the torch and, for Hugging
Face models, transformers versions). A model that does not trace gets
NAME.trace-error.txt (the first line of the error) instead. tokens.bin and
adamw.json are the data and config of that loop (test/Train/Inputs/byom.py).

The .pt and reference in test/Import/Inputs/torch2/torchscript are
`make_torchscript.py test/Import/Inputs/torch2/torchscript nanogpt-sdpa`'s;
its tokens.bin and adamw.json are not kept there, being torch2/'s.
"""
import json
import os
import sys
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

# The models of the .pt2 fixtures (this directory), so every path imports
# the same modules.
sys.path.insert(0, HERE)
import make_fixtures as fixtures  # noqa: E402
byom = fixtures.byom
NAMES = ["nanogpt-sdpa", "nanogpt-gqa", "hf-gpt2", "hf-llama", "hf-qwen3",
         "hf-mistral"]
MODELS = {**fixtures.MODELS, **fixtures.HF_MODELS}


def first_line(text):
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()[:300]
    return "(no message)"


def trace(out, name, tokens):
    torch.manual_seed(0)
    model = MODELS[name]()
    example = byom.batch(tokens, 0)
    inputs = [{"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}
              for t in example]
    try:
        traced = torch.jit.trace(model, example)
        traced.save(os.path.join(out, f"{name}.pt"),
                    _extra_files={"ds_inputs.json": json.dumps(inputs)})
    except Exception as e:  # noqa: BLE001 - recorded, not handled
        with open(os.path.join(out, f"{name}.trace-error.txt"), "w") as f:
            f.write(f"{type(e).__name__}: {first_line(e)}\n")
        return
    # The losses of the module itself, from the weights just saved.
    byom.train(out, model.parameters(), model, tokens)
    ref = os.path.join(out, "reference.json")
    losses = json.load(open(ref))["losses"]
    os.remove(ref)
    versions = {"torch_version": torch.__version__}
    if name in fixtures.HF_MODELS:
        import transformers
        versions["transformers_version"] = transformers.__version__
    with open(os.path.join(out, f"{name}.reference.json"), "w") as f:
        json.dump({**versions, "steps": byom.STEPS, "losses": losses}, f, indent=1)
        f.write("\n")


def main(out, names):
    warnings.filterwarnings("ignore")
    os.makedirs(out, exist_ok=True)
    tokens = byom.make_tokens()
    byom.write_data(out, tokens)
    for name in names or NAMES:
        trace(out, name, tokens)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
