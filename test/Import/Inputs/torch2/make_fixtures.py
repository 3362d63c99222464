#!/usr/bin/env python3
"""Makes the torch.export fixtures of the .pt2 tests (run with torch 2.x,
e.g. from the ignored virtualenv .venv-torch2; `make test` only reads what it
wrote):

  .venv-torch2/bin/python test/Import/Inputs/torch2/make_fixtures.py test/Import/Inputs/torch2
  .venv-torch2/bin/python test/Import/Inputs/torch2/make_fixtures.py --fuzz-seed test/fuzz/corpus/pt2
  .venv-torch2/bin/python test/Import/Inputs/torch2/make_fixtures.py --hf-checkpoints test/Import/Inputs/torch2
  .venv-torch2/bin/python test/Import/Inputs/torch2/make_fixtures.py --moe test/Import/Inputs/torch2

For each model NAME (nanogpt-sdpa, nanogpt-gqa, rotary-ops, docs-gpt,
hf-gpt2, hf-llama, hf-qwen3, hf-mistral): NAME.pt2 (torch.export.save of a
module whose forward returns the loss) and NAME.reference.json (the losses
of STEPS AdamW steps of the same module in torch, and the torch and, for
Hugging Face models, transformers versions that made both). tokens.bin and
adamw.json are the data and config of that loop (test/Train/Inputs/
byom.py's sequential batches and AdamW settings).

For `--init-from` a Hugging Face checkpoint by its own names, hf-llama-ckpt/
and hf-gpt2-ckpt/ hold what save_pretrained writes for the same
architectures with other weights (seed 1): Llama in bf16 as Llama-3 ships,
one model.safetensors and its config.json; GPT-2 in f32, sharded
(model.safetensors.index.json and its shards). Each NAME-ckpt.reference.json
holds the losses of the same loop started from those weights, and
hf-llama-ckpt.spec-reference.json those of the logits' cross-entropy with
the targets as given (what ds-train --model hf-llama-ckpt/config.json
trains).
"""
import copy
import importlib.util
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../../../.."))


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


byom = load("test/Train/Inputs/byom.py", "byom")
measure = load("scripts/torch2-measure.py", "torch2_measure")
fixtures = load("test/Import/Inputs/make_fixtures.py", "make_fixtures")

MODELS = {
    # nanoGPT's shape: F.scaled_dot_product_attention(is_causal=True), tied head.
    "nanogpt-sdpa": lambda: measure.NanoGPT(n_layer=2, C=32, n_head=4,
                                            vocab=byom.VOCAB, block=byom.SEQ),
    # The same with grouped-query attention: 2 key/value heads for 4, by
    # SDPA's enable_gqa.
    "nanogpt-gqa": lambda: measure.NanoGPT(n_layer=2, C=32, n_head=4,
                                           vocab=byom.VOCAB, block=byom.SEQ,
                                           n_kv_head=2),
    # Rotary tables through every view and product of constants that folds.
    "rotary-ops": lambda: RotaryOps(byom.VOCAB),
    # The docs' GPT: matmul/softmax attention under a ones().tril() mask.
    "docs-gpt": lambda: fixtures.GPT(n_layer=2, n_embd=32, n_head=4,
                                     vocab_size=byom.VOCAB, n_positions=byom.SEQ),
}

# Hugging Face models (transformers, random weights from a small config);
# forward returns the loss of labels=targets.
HF_MODELS = {
    "hf-gpt2": lambda: measure.hf("gpt2"),
    # Rotary tables computed in the graph from the inv_freq buffer (cos and
    # sin of constants), RMSNorm decomposed (pow, mean, rsqrt), SwiGLU,
    # grouped-query attention by repeat_kv (2 key/value heads for 4).
    "hf-llama": lambda: measure.hf("llama3"),
    # The same plus RMSNorm of each head's queries and keys (q_norm, k_norm).
    "hf-qwen3": lambda: measure.hf("qwen3"),
    "hf-mistral": lambda: measure.hf("mistral"),
}


class RotaryOps(torch.nn.Module):
    """Rotary tables computed from a buffer the other ways models write
    them (a batched matmul of inv_freq and the positions as older
    transformers did, then transpose, select, t, permute, a strided slice,
    an mm with a full() matrix): all constants, so all fold; only the
    products with the activations map."""

    def __init__(self, vocab, C=32):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, C)
        self.head = torch.nn.Linear(C, vocab)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, C, 2).float() / C))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, idx, targets):
        B, T = idx.shape
        C = self.inv_freq.shape[0] * 2
        pos = torch.arange(T)[None, :].expand(B, -1)
        inv = self.inv_freq[None, :, None].float().expand(B, -1, 1)
        freqs = (inv @ pos[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos()[0].t().t()
        sin = emb.sin().permute(0, 2, 1).permute(0, 2, 1)
        sin = torch.cat((sin[..., ::2], sin[..., 1::2]), dim=-1)
        avg = torch.mm(cos, torch.full((C, C), 1.0 / C))
        x = self.emb(idx)
        half = torch.cat((-x[..., C // 2:], x[..., :C // 2]), dim=-1)
        x = x * cos + half * sin + avg
        logits = self.head(x)
        return torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)),
                                                 targets.view(-1))


class Tiny(torch.nn.Module):
    """The pt2 fuzz target's seed: small, and through the folding of a
    constant's view and cast as well as the mapping."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(8, 4)
        self.ln = torch.nn.LayerNorm(4)
        self.head = torch.nn.Linear(4, 8)

    def forward(self, ids, targets):
        T = ids.shape[1]
        x = self.ln(self.emb(ids) + torch.arange(T).unsqueeze(-1).float())
        return torch.nn.functional.cross_entropy(self.head(x).view(-1, 8),
                                                 targets.view(-1))


class Unsupported(torch.nn.Module):
    """Ops ds does not map, for the one-error-lists-them-all test; cos of a
    computed value stays an op (only constants fold)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x, y):
        h = torch.cumsum(self.lin(x), dim=-1)
        h = torch.cos(torch.erf(h))
        return torch.nn.functional.mse_loss(h, y)


def unsupported(out):
    torch.manual_seed(0)
    example = (torch.randn(2, 4), torch.randn(2, 4))
    program = torch.export.export(Unsupported(), example)
    torch.export.save(program, os.path.join(out, "unsupported.pt2"))


def fuzz_seed(out):
    torch.manual_seed(0)
    example = (torch.randint(0, 8, (2, 3)), torch.randint(0, 8, (2, 3)))
    path = os.path.join(out, "tiny.pt2")
    torch.export.save(torch.export.export(Tiny(), example), path)
    with open(path, "rb") as f:
        data = f.read(3000)
    with open(os.path.join(out, "truncated.pt2"), "wb") as f:
        f.write(data)


def hf_moe(name):
    """One decoder layer of a Hugging Face mixture of experts (4 experts,
    top 2): ds refuses it by its router (test/Import/pt2-moe.test)."""
    import transformers as tr
    small = dict(vocab_size=byom.VOCAB, hidden_size=32, intermediate_size=64,
                 num_hidden_layers=1, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=byom.SEQ * 2)
    if name == "hf-mixtral":
        model = tr.MixtralForCausalLM(tr.MixtralConfig(
            **small, num_local_experts=4, num_experts_per_tok=2,
            sliding_window=None))
    else:
        model = tr.Qwen3MoeForCausalLM(tr.Qwen3MoeConfig(
            **small, head_dim=8, num_experts=4, num_experts_per_tok=2,
            moe_intermediate_size=32, decoder_sparse_step=1))
    return measure.HFLoss(model.eval())


def moe(out):
    example = byom.batch(byom.make_tokens(), 0)
    for name in ("hf-mixtral", "hf-qwen3-moe"):
        torch.manual_seed(0)
        program = torch.export.export(hf_moe(name), example)
        torch.export.save(program, os.path.join(out, f"{name}.pt2"))


class HFLogitsLoss(torch.nn.Module):
    """A Hugging Face causal LM's logits against the targets as given."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, targets):
        logits = self.model(input_ids=input_ids).logits
        return torch.nn.functional.cross_entropy(
            logits.view(-1, logits.size(-1)), targets.view(-1))


# Checkpoints of HF_MODELS for --init-from: (save dtype, max shard size).
HF_CHECKPOINTS = {
    "hf-llama": (torch.bfloat16, None),
    "hf-gpt2": (torch.float32, "40KB"),
}


def hf_checkpoints(out):
    """NAME-ckpt/ (save_pretrained, seed 1) and NAME-ckpt.reference.json."""
    import shutil
    import transformers
    tokens = byom.make_tokens()
    for name, (dtype, shard) in HF_CHECKPOINTS.items():
        torch.manual_seed(1)
        model = HF_MODELS[name]()
        ckpt = os.path.join(out, f"{name}-ckpt")
        shutil.rmtree(ckpt, ignore_errors=True)
        kwargs = {"max_shard_size": shard} if shard else {}
        model.model.to(dtype).save_pretrained(ckpt, **kwargs)
        # The weights, and the config of a family the spec format reads;
        # generation files are not read.
        keep = (".safetensors", ".safetensors.index.json")
        if name == "hf-llama":
            keep += ("config.json",)
        for f in os.listdir(ckpt):
            if not f.endswith(keep):
                os.remove(os.path.join(ckpt, f))
        # Training starts from the stored values, widened to f32.
        model.model.to(torch.float32)
        runs = {"reference": model}
        if name == "hf-llama":
            # ds-train --model config.json: a spec's loss is the
            # cross-entropy of every position's logits with its next token
            # (byom's targets), where labels= shifts once more.
            runs["spec-reference"] = HFLogitsLoss(copy.deepcopy(model.model))
        for kind, run in runs.items():
            byom.train(out, run.parameters(), run, tokens)
            ref = os.path.join(out, "reference.json")
            losses = json.load(open(ref))["losses"]
            os.remove(ref)
            with open(os.path.join(out, f"{name}-ckpt.{kind}.json"), "w") as f:
                json.dump({"torch_version": torch.__version__,
                           "transformers_version": transformers.__version__,
                           "steps": byom.STEPS, "losses": losses}, f, indent=1)
                f.write("\n")


def main(out):
    os.makedirs(out, exist_ok=True)
    unsupported(out)
    tokens = byom.make_tokens()
    byom.write_data(out, tokens)
    example = byom.batch(tokens, 0)
    for name, make in {**MODELS, **HF_MODELS}.items():
        torch.manual_seed(0)
        model = make()
        program = torch.export.export(model, example)
        torch.export.save(program, os.path.join(out, f"{name}.pt2"))
        byom.train(out, model.parameters(), model, tokens)
        ref = os.path.join(out, "reference.json")
        losses = json.load(open(ref))["losses"]
        os.remove(ref)
        versions = {"torch_version": torch.__version__}
        if name in HF_MODELS:
            import transformers
            versions["transformers_version"] = transformers.__version__
        with open(os.path.join(out, f"{name}.reference.json"), "w") as f:
            json.dump({**versions, "steps": byom.STEPS, "losses": losses}, f,
                      indent=1)
            f.write("\n")
    hf_checkpoints(out)
    moe(out)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--fuzz-seed"]:
        fuzz_seed(sys.argv[2])
    elif sys.argv[1:2] == ["--hf-checkpoints"]:
        hf_checkpoints(sys.argv[2])
    elif sys.argv[1:2] == ["--moe"]:
        moe(sys.argv[2])
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else HERE)
