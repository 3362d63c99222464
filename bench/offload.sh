#!/usr/bin/env bash
# offload: ZeRO-Infinity's optimizer state on NVMe (docs/offload.md) on a
# machine made smaller than the job: a GPT (6 layers, n_embd 1024, vocab
# 8192, 84M parameters, 0.67 GB of f32 Adam moments), one rank, ZeRO-1,
# AdamW, micro-batch 2 x 128 tokens.
#   1. in memory, no limit: tokens/s and peak RSS (the baseline)
#   2. offload_optimizer {"device": "nvme"} under no limit: its peak RSS
#   3. a memory limit L (a cgroup: v2 memory.max or v1
#      memory.limit_in_bytes, swap off) of 1.1 x that peak, where the
#      moments are >= 2x the RAM the limit leaves them (checked, printed);
#      ds-train's fit check sees L through DS_MEMORY_BYTES
#   4. the NVMe run inside the limit: it trains, with run 1's losses bit
#      for bit; tokens/s against run 1's
#   5. the in-memory run inside the limit: refused before the first step
#      (or killed): it does not fit
#   6. dd with O_DIRECT on the same path, writing and reading the moments'
#      size: the disk's bandwidth, against the bytes the offloaded step
#      moves (each moment read and written once a step) per second of step
# JSON lines: tokens_per_s_nvme_in_limit (baseline: in memory, no limit),
# peak_rss_bytes_nvme (baseline: in memory; lower is better) and
# disk_bytes_per_s (the step's moments traffic over its step time;
# baseline: dd's read+write bandwidth on the path).
# Environment: OFFLOAD_PATH (default: a folder under $TMPDIR or /tmp; put
# it on the disk to measure), OFFLOAD_STEPS (8), OFFLOAD_SKIP (3).
# Needs root for the cgroup; without one the limit is only ds-train's
# check (DS_MEMORY_BYTES), and the bench says so.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
ds_train=$(ds_tool ds-train)
steps=${OFFLOAD_STEPS:-8}
skip=${OFFLOAD_SKIP:-3}
tmp=$(mktemp -d)
nvme=${OFFLOAD_PATH:-$tmp/nvme}
cg=""
cleanup() {
  [ -n "$cg" ] && rmdir "$cg" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$nvme"

cat > "$tmp/gpt.json" <<'EOF'
{"model_type": "gpt", "n_layer": 6, "n_embd": 1024, "n_head": 16,
 "n_positions": 128, "vocab_size": 8192, "tie_word_embeddings": true,
 "init_seed": 0}
EOF
base='"train_batch_size": 2, "train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0, "steps_per_print": 1000, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "weight_decay": 0.01}}'
echo "{$base, \"zero_optimization\": {\"stage\": 1}}" > "$tmp/mem.json"
echo "{$base, \"zero_optimization\": {\"stage\": 1, \"offload_optimizer\": {\"device\": \"nvme\", \"nvme_path\": \"$nvme\"}}}" > "$tmp/nvme.json"

# run NAME CONFIG [PREFIX...]: one ds-train run, metrics in $tmp/NAME.jsonl.
run() {
  local name=$1 cfg=$2
  shift 2
  "$@" "$ds_train" --model "$tmp/gpt.json" --config "$cfg" --synthetic \
    --steps "$steps" --quiet --metrics "$tmp/$name.jsonl"
}
# stat FILE: tokens/s (median of the measured steps), peak RSS, losses.
stat() {
  "$PYTHON" - "$1" "$skip" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if "loss" in r]
skip = int(sys.argv[2])
ms = statistics.median(r["step_ms"] for r in rows[skip:])
tps = statistics.median(r["tokens_per_s"] for r in rows[skip:])
print(f"{tps:.2f} {ms:.1f} {max(r['peak_rss_bytes'] for r in rows)}")
PY
}

echo "offload: 1. in memory" >&2
run mem "$tmp/mem.json"
read -r mem_tps mem_ms mem_rss < <(stat "$tmp/mem.jsonl")
echo "offload: 2. NVMe ($nvme), no limit" >&2
run nvme_free "$tmp/nvme.json"
read -r free_tps free_ms free_rss < <(stat "$tmp/nvme_free.jsonl")
# The moments: two f32 copies of every parameter (one rank holds them all).
params=$("$PYTHON" - "$tmp/gpt.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
C, L, V, T = s["n_embd"], s["n_layer"], s["vocab_size"], s["n_positions"]
print(L * (12 * C * C + 13 * C) + V * C + T * C + 2 * C)
PY
)
moments=$((params * 8))
limit=$(( free_rss * 11 / 10 ))
left=$(( limit - (mem_rss - moments) ))
echo "offload: $params parameters, moments $moments B; peak RSS in memory $mem_rss B," \
  "with NVMe $free_rss B; limit $limit B leaves the moments $left B" \
  "($("$PYTHON" -c "print(round($moments / max($left, 1), 2))")x less than they need)" >&2
if [ $((moments)) -lt $((2 * left)) ]; then
  echo "offload: warning: the limit leaves the moments more than half their size" >&2
fi

# A memory cgroup of `limit` bytes, swap off, that the runs join.
if [ "$(id -u)" = 0 ] && [ -f /sys/fs/cgroup/cgroup.controllers ] &&
  grep -qw memory /sys/fs/cgroup/cgroup.controllers &&
  mkdir "/sys/fs/cgroup/ds-bench-$$" 2>/dev/null; then
  cg=/sys/fs/cgroup/ds-bench-$$
  echo "$limit" > "$cg/memory.max"
  echo 0 > "$cg/memory.swap.max" 2>/dev/null || true
elif [ "$(id -u)" = 0 ] && [ -d /sys/fs/cgroup/memory ] &&
  mkdir "/sys/fs/cgroup/memory/ds-bench-$$" 2>/dev/null; then
  cg=/sys/fs/cgroup/memory/ds-bench-$$
  echo "$limit" > "$cg/memory.limit_in_bytes"
  echo "$limit" > "$cg/memory.memsw.limit_in_bytes" 2>/dev/null || true
else
  echo "offload: no memory cgroup here (needs root); the limit is ds-train's check only" >&2
fi
limited() {
  if [ -n "$cg" ]; then
    sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec env "$@"' sh "$cg" \
      DS_MEMORY_BYTES="$limit" "$@"
  else
    env DS_MEMORY_BYTES="$limit" "$@"
  fi
}

echo "offload: 4. NVMe inside the limit" >&2
run nvme "$tmp/nvme.json" limited
read -r nvme_tps nvme_ms nvme_rss < <(stat "$tmp/nvme.jsonl")
"$PYTHON" - "$tmp/mem.jsonl" "$tmp/nvme.jsonl" <<'PY'
import json, sys
a, b = ([(r["loss"], r["grad_norm"]) for r in map(json.loads, open(p)) if "loss" in r]
        for p in sys.argv[1:3])
if a != b:
    sys.exit("offload: the NVMe run's losses differ from the in-memory run's")
print(f"offload: NVMe run inside the limit: {len(a)} steps, losses bitwise equal "
      "to the in-memory run", file=sys.stderr)
PY

echo "offload: 5. in memory inside the limit" >&2
if run mem_limited "$tmp/mem.json" limited 2> "$tmp/mem_limited.err"; then
  echo "offload: warning: the in-memory run fit inside the limit" >&2
else
  echo "offload: the in-memory run does not fit: $(tail -1 "$tmp/mem_limited.err" | cut -c1-240)" >&2
fi

echo "offload: 6. dd on $nvme" >&2
mb=$(( (moments + (1 << 20) - 1) >> 20 ))
wr=$( { dd if=/dev/zero of="$nvme/dd.bin" bs=1M count="$mb" oflag=direct conv=fsync 2>&1 >/dev/null; } | tail -1)
rd=$( { dd if="$nvme/dd.bin" of=/dev/null bs=1M iflag=direct 2>&1 >/dev/null; } | tail -1)
rm -f "$nvme/dd.bin"
secs() { "$PYTHON" -c "import re,sys; print(re.search(r'([0-9.,e+-]+) s,', sys.argv[1]).group(1).replace(',', '.'))" "$1"; }
dd_bw=$("$PYTHON" -c "print(2 * $mb * 2**20 / ($(secs "$wr") + $(secs "$rd")))")
echo "offload: dd write: $wr; read: $rd" >&2
echo "offload: in memory ${mem_ms} ms/step ($mem_tps tokens/s, peak RSS $mem_rss B);" \
  "NVMe in the limit ${nvme_ms} ms/step ($nvme_tps tokens/s, peak RSS $nvme_rss B);" \
  "load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

bench_json offload tokens_per_s_nvme_in_limit "$nvme_tps" "$mem_tps" \
  "ds in memory without a limit" 1
bench_json offload peak_rss_bytes_nvme "$nvme_rss" "$mem_rss" \
  "ds in memory (peak RSS)" 0
bench_json offload disk_bytes_per_s "$("$PYTHON" -c "print(2 * $moments / ($nvme_ms / 1e3))")" \
  "$dd_bw" "dd O_DIRECT write+read on the same path" 1
