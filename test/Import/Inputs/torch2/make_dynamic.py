#!/usr/bin/env python3
"""Makes the fixtures of programs exported with dynamic batch and sequence
dims (run with torch 2.x, e.g. from the ignored virtualenv .venv-torch2;
`make test` only reads what it wrote):

  .venv-torch2/bin/python test/Import/Inputs/torch2/make_dynamic.py test/Import/Inputs/torch2/dynamic
  .venv-torch2/bin/python test/Import/Inputs/torch2/make_dynamic.py --fuzz-seed test/fuzz/corpus/pt2
  .venv-torch2/bin/python test/Import/Inputs/torch2/make_dynamic.py --sweep OUT build/bin/ds-train

For each model NAME (nanogpt-sdpa, hf-llama: make_fixtures.py's modules):
NAME.pt2, torch.export.export of the module at make_fixtures.py's example
batch (4 x 16) with dynamic_shapes {0: Dim("batch", max=64), 1: Dim("seq",
min=2, max=16)} on both inputs, and NAME.reference.json, the losses of
STEPS AdamW steps of the same module in torch at another size: TRAIN[NAME]
(micro-batch, sequence length), on make_fixtures.py's tokens.bin, batches in
docs/data.md's sequential order at that size. adamw.json is the config of
that loop (micro-batch TRAIN_BATCH). malformed-expr.pt2 is a small dynamic
program (make_fixtures.py's Tiny) with one size expression made unreadable
(a call of MALFORMED), for the one-line error. tiny-dynamic.pt2 is that
program unbroken, tiny-str.pt2 the same with its expressions in sympy's
str() form, tiny-forms.pt2 with each size written through other functions
(other_forms): all three import to the same module. tiny-derived.pt2
exports Tiny with a derived sequence Dim, 2 x Dim("half"). --fuzz-seed writes
tiny-dynamic.pt2 and malformed-expr.pt2 as pt2 fuzz inputs. --sweep
exports every model of make_fixtures.py the same way and trains each in
the given ds-train at each SWEEP size against torch at that size (nothing
kept; make test-torch2 runs it).
"""
import json
import os
import sys
import warnings
import zipfile

import torch
from torch.export import Dim

HERE = os.path.dirname(os.path.abspath(__file__))

# The models of the .pt2 fixtures (this directory), so every path imports
# the same modules.
sys.path.insert(0, HERE)
import make_fixtures as fixtures  # noqa: E402
byom = fixtures.byom
MODELS = {**fixtures.MODELS, **fixtures.HF_MODELS}

TRAIN_BATCH = 2
# (micro-batch, sequence length) each model trains at in the tests, neither
# the export's 4 x 16.
TRAIN = {"nanogpt-sdpa": (TRAIN_BATCH, 8), "hf-llama": (TRAIN_BATCH, 12)}
# What replaces "Mul" in a size expression: a function ds does not know.
MALFORMED = "Frobnicate"


def dynamic(model):
    """Both batch inputs dynamic in batch and sequence (one Dim each,
    shared), as nanoGPT and Hugging Face models are usually exported."""
    import inspect
    batch = Dim("batch", max=64)
    seq = Dim("seq", min=2, max=byom.SEQ)
    names = list(inspect.signature(model.forward).parameters)
    return {name: {0: batch, 1: seq} for name in names}


def export(model, path, example=None):
    if example is None:
        example = byom.batch(byom.make_tokens(), 0)
    program = torch.export.export(model, example, dynamic_shapes=dynamic(model))
    torch.export.save(program, path)


def losses_at(model, batch, seq):
    """byom's loop (AdamW, sequential batches) at batch x seq."""
    import tempfile
    saved = byom.BATCH, byom.SEQ
    byom.BATCH, byom.SEQ = batch, seq
    try:
        with tempfile.TemporaryDirectory() as tmp:
            byom.train(tmp, model.parameters(), model, byom.make_tokens())
            with open(os.path.join(tmp, "reference.json")) as f:
                return json.load(f)["losses"]
    finally:
        byom.BATCH, byom.SEQ = saved


def edit_expressions(src, dst, edit):
    """src with each size expression E of models/model.json (tensor sizes
    and sym_int_values) replaced by edit(E, tensor), tensor None for a
    sym_int_values entry; an unchanged E when it returns None."""
    with zipfile.ZipFile(src) as zin, \
            zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith("models/model.json"):
                program = json.loads(data)
                graph = program["graph_module"]["graph"]
                exprs = [(d["as_expr"], name)
                         for name, meta in graph["tensor_values"].items()
                         for d in meta["sizes"] if "as_expr" in d]
                exprs += [(v["as_expr"], None)
                          for v in graph["sym_int_values"].values()
                          if "as_expr" in v]
                for expr, tensor in exprs:
                    new = edit(expr["expr_str"], tensor)
                    if new is not None:
                        expr["expr_str"] = new
                data = json.dumps(program).encode()
            zout.writestr(info, data)


def write_config(out, batch):
    """OUT/adamw.json: byom's AdamW loop at micro-batch `batch`."""
    path = os.path.join(out, "adamw.json")
    with open(path, "w") as f:
        json.dump({"train_batch_size": batch,
                   "train_micro_batch_size_per_gpu": batch,
                   "gradient_clipping": 0,
                   "optimizer": {"type": "AdamW",
                                 "params": {"lr": byom.LR,
                                            "weight_decay": 0.01}}}, f)
    return path


def break_expression(src, dst):
    """src with its first size expression that is a product made a call of
    MALFORMED instead."""
    done = []

    def edit(expr, tensor):
        if done or not expr.startswith("Mul("):
            return None
        done.append(tensor)
        return MALFORMED + expr[3:]
    edit_expressions(src, dst, edit)
    assert done, "no product among the sizes"


def as_str(src, dst):
    """src with every expression in sympy's str() form ("4*s13",
    "Min(64, 64*s13)"), as releases before srepr wrote them."""
    import sympy
    edit_expressions(src, dst, lambda expr, tensor: str(sympy.sympify(expr)))


def other_forms(src, dst, inputs):
    """src with each size expression E of a tensor other than the batch
    `inputs` written as a sum equal to E (for E >= 0) through the functions
    torch.export may write: CeilDiv, FloorDiv, Mod, PythonMod, Min, Max,
    Pow, Rational, ModularIndexing, Where, Eq, And."""
    def edit(expr, tensor):
        if tensor in inputs or tensor is None:
            return None
        e = expr
        return (f"Add(CeilDiv(Mul(Integer(3), {e}), Integer(3)), "
                f"Mod({e}, Integer(1)), Min(Integer(0), {e}), "
                f"Max(Integer(0), Mul(Integer(-1), {e})), "
                f"PythonMod(Integer(7), Integer(-7)), "
                f"Mul(Rational(1, 2), Integer(0)), "
                f"FloorDiv(Pow({e}, Integer(2)), Add(Pow({e}, Integer(2)), Integer(1))), "
                f"ModularIndexing({e}, Integer(1), Integer(1)), "
                f"Where(And(Eq({e}, {e}), StrictLessThan(Integer(-1), {e})), Integer(0), Integer(99)))")
    edit_expressions(src, dst, edit)


def tiny(out):
    torch.manual_seed(0)
    path = os.path.join(out, "tiny-dynamic.pt2")
    example = (torch.randint(0, 8, (2, 3)), torch.randint(0, 8, (2, 3)))
    export(fixtures.Tiny(), path, example)
    return path


def tiny_derived(out):
    """Tiny with a derived sequence Dim: its length is 2 x half."""
    torch.manual_seed(0)
    half = Dim("half", min=1, max=8)
    batch = Dim("batch", max=64)
    example = (torch.randint(0, 8, (2, 4)), torch.randint(0, 8, (2, 4)))
    dims = {"ids": {0: batch, 1: 2 * half}, "targets": {0: batch, 1: 2 * half}}
    program = torch.export.export(fixtures.Tiny(), example, dynamic_shapes=dims)
    torch.export.save(program, os.path.join(out, "tiny-derived.pt2"))


def main(out):
    warnings.filterwarnings("ignore")
    os.makedirs(out, exist_ok=True)
    for name, (batch, seq) in TRAIN.items():
        torch.manual_seed(0)
        model = MODELS[name]()
        export(model, os.path.join(out, f"{name}.pt2"))
        losses = losses_at(model, batch, seq)
        versions = {"torch_version": torch.__version__}
        if name in fixtures.HF_MODELS:
            import transformers
            versions["transformers_version"] = transformers.__version__
        with open(os.path.join(out, f"{name}.reference.json"), "w") as f:
            json.dump({**versions, "micro_batch": batch, "seq_len": seq,
                       "steps": byom.STEPS, "losses": losses}, f, indent=1)
            f.write("\n")
    write_config(out, TRAIN_BATCH)
    path = tiny(out)
    break_expression(path, os.path.join(out, "malformed-expr.pt2"))
    as_str(path, os.path.join(out, "tiny-str.pt2"))
    other_forms(path, os.path.join(out, "tiny-forms.pt2"), {"ids", "targets"})
    tiny_derived(out)


# Sizes the sweep trains every model at (micro-batch, sequence length).
SWEEP = [(2, 8), (3, 13)]


def sweep(out, ds_train):
    """Every model of make_fixtures.py exported dynamic, trained by
    ds_train at each SWEEP size against torch at that size; prints one line
    each, returns how many failed."""
    import subprocess
    failed = 0
    check = [sys.executable, os.path.join(HERE, "pt2tool.py"), "check"]
    for name in MODELS:
        for batch, seq in SWEEP:
            torch.manual_seed(0)
            model = MODELS[name]()
            path = os.path.join(out, f"{name}.pt2")
            export(model, path)
            ref = os.path.join(out, f"{name}.reference.json")
            with open(ref, "w") as f:
                json.dump({"torch_version": torch.__version__,
                           "losses": losses_at(model, batch, seq)}, f)
            config = write_config(out, batch)
            metrics = os.path.join(out, f"{name}.jsonl")
            run = subprocess.run(
                [ds_train, "--model", path, "--seq-len", str(seq),
                 "--config", config, "--data", os.path.join(HERE, "tokens.bin"),
                 "--data-order", "sequential", "--steps", str(byom.STEPS),
                 "--quiet", "--metrics", metrics], capture_output=True, text=True)
            result = run.stderr.strip()[:300] if run.returncode else \
                subprocess.run(check + [ref, metrics], capture_output=True,
                               text=True).stdout.strip()
            ok = run.returncode == 0 and result.endswith(" ok")
            failed += not ok
            print(f"{name} (dynamic, {batch} x {seq}): {result}", flush=True)
    return failed


def fuzz_seed(out):
    path = tiny(out)
    break_expression(path, os.path.join(out, "malformed-expr.pt2"))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--fuzz-seed"]:
        fuzz_seed(sys.argv[2])
    elif sys.argv[1:2] == ["--sweep"]:
        warnings.filterwarnings("ignore")
        sys.exit(1 if sweep(sys.argv[2], sys.argv[3]) else 0)
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "dynamic"))
