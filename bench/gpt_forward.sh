#!/usr/bin/env bash
# gpt_forward: forward + mean cross-entropy of the issue-3 bench GPT
# (n_layer 4, n_embd 256, n_head 4, n_positions 128, vocab 4096, batch 4),
# tokens/s, ds vs PyTorch eager (no_grad), same threads.
#   ds:       ds-import --spec -> ds-run (ds-lower-nn-to-linalg,
#             ds-lower-to-llvm, JIT), --repeat calls on random tokens
#   baseline: the same GPT-2 block structure as a torch.nn.Module
# The training step (forward + backward + AdamW) is bench train_single.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
ds_import=$(ds_tool ds-import)
ds_run=$(ds_tool ds-run)
reps=${GPT_REPS:-20}
B=4 T=128
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/gpt.json" <<'JSON'
{"model_type": "gpt", "n_layer": 4, "n_embd": 256, "n_head": 4,
 "n_positions": 128, "vocab_size": 4096, "tie_word_embeddings": true,
 "init_seed": 0}
JSON
"$ds_import" --spec "$tmp/gpt.json" --micro-batch $B -o "$tmp/gpt.mlir"
ms=$("$ds_run" "$tmp/gpt.mlir" --entry forward --random-inputs 1 \
  --repeat "$reps" --time --blas-threads "$BENCH_THREADS" |
  "$PYTHON" -c "import json,sys; print(json.load(sys.stdin)['ms_per_call'])")
ds=$("$PYTHON" -c "print($B * $T / ($ms / 1e3))")

base=$(baseline_python - "$BENCH_THREADS" "$reps" <<'PY'
import math, sys, time
import torch
torch.set_num_threads(int(sys.argv[1]))
reps = int(sys.argv[2])
B, T, C, H, V, L = 4, 128, 256, 4, 4096, 4
F = torch.nn.functional

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = torch.nn.LayerNorm(C), torch.nn.LayerNorm(C)
        self.c_attn, self.c_proj = torch.nn.Linear(C, 3 * C), torch.nn.Linear(C, C)
        self.c_fc, self.mlp_proj = torch.nn.Linear(C, 4 * C), torch.nn.Linear(4 * C, C)
    def forward(self, x, mask):
        q, k, v = self.c_attn(self.ln_1(x)).split(C, 2)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        a = (q @ k.transpose(-2, -1)) / math.sqrt(C // H) + mask
        y = (a.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))

torch.manual_seed(0)
wte, wpe = torch.nn.Embedding(V, C), torch.nn.Embedding(T, C)
blocks = torch.nn.ModuleList(Block() for _ in range(L))
ln_f = torch.nn.LayerNorm(C)
mask = torch.full((T, T), float("-inf")).triu(1)
idx, tgt = torch.randint(0, V, (B, T)), torch.randint(0, V, (B, T))

def forward():
    x = wte(idx) + wpe(torch.arange(T))
    for b in blocks:
        x = b(x, mask)
    logits = ln_f(x) @ wte.weight.t()
    return F.cross_entropy(logits.view(-1, V), tgt.view(-1))

with torch.no_grad():
    forward()
    t = time.perf_counter()
    for _ in range(reps):
        forward()
    ms = (time.perf_counter() - t) * 1e3 / reps
print(B * T / (ms / 1e3))
PY
)
bench_json gpt_forward "tokens_per_s_t${BENCH_THREADS}" "$ds" "$base" "pytorch eager (no_grad)" 1
