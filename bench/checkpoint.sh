#!/usr/bin/env bash
# checkpoint: checkpoint I/O of the train_single bench GPT (n_layer 4, n_embd
# 256, vocab 4096; fp32 AdamW: 51 MB of parameters and Adam state per save,
# one rank, BENCH_THREADS threads).
#   sync_save_GBps: ds-train --save-sync --save-interval 2; each save's bytes
#     over its checkpoint_stall_ms (the training thread waits for all of it:
#     shard write, fsync, manifest, `latest`), median over the saves.
#     baseline: dd if=/dev/zero bs=1M conv=fsync of the same bytes into a new
#     file in the same directory (each save is a new file), removed after
#     (ds hands its written pages back too); CHECKPOINT_REPEATS runs before
#     and as many after the ds run, median.
#   sync_shard_write_GBps: the same saves' checkpoint_write_s (the shard
#     file alone: write + fsync + rename), same baseline.
#   sync_save_GBps_vs_dd_shard: sync_save_GBps again, against dd of a saved
#     shard file (read once, so it comes from the page cache) instead of
#     zeros: the same bytes a save writes (a VM's disk may store zeros
#     faster than data).
#   save_stall_pct_of_step: async saves (the default) every 2 steps; per
#     save, the training thread's stall (checkpoint_stall_ms at the save,
#     checkpoint_copy_wait_ms two steps later) as % of the median step_ms of
#     steps without a save; median over the saves. baseline: the same for
#     the sync run. Target (docs/checkpoints.md): async <= 5%.
# Also on stderr: the median step time of steps running while an async write
# is in flight vs the others (the write shares the machine's cores).
# Environment: CHECKPOINT_STEPS (17), CHECKPOINT_REPEATS (5), CHECKPOINT_DIR
# (a temporary directory; point it at the disk to measure).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
ds_train=$(ds_tool ds-train)
ds_ckpt=$(ds_tool ds-ckpt)
steps=${CHECKPOINT_STEPS:-17}
repeats=${CHECKPOINT_REPEATS:-5}
tmp=$(mktemp -d ${CHECKPOINT_DIR:+-p "$CHECKPOINT_DIR"})
trap 'rm -rf "$tmp"' EXIT
args=(--model "$here/train_single/gpt.json"
      --config "$here/train_single/ds_config.json" --synthetic
      --steps "$steps" --save-interval 2 --quiet)

# dd_times BYTES N [SOURCE]: N dd runs of BYTES (rounded to MiB) from
# SOURCE (/dev/zero) to new files, one line of start, end and MiB each.
dd_times() {
  local mib=$(( ($1 + (1 << 20) - 1) >> 20 )) i src=${3:-/dev/zero}
  for i in $(seq "$2"); do
    local t0 t1
    t0=$(date +%s.%N)
    dd if="$src" of="$tmp/dd.$i" bs=1M count="$mib" conv=fsync status=none
    t1=$(date +%s.%N)
    rm -f "$tmp/dd.$i"
    echo "$t0 $t1 $mib"
  done
}

bytes=50890752
dd_times $bytes "$repeats" > "$tmp/dd.before"
"$ds_train" "${args[@]}" --save "$tmp/sync" --save-sync --metrics "$tmp/sync.jsonl"
dd_times $bytes "$repeats" > "$tmp/dd.after"
shard=$tmp/sync/global_step2/rank0.safetensors
cat "$shard" > /dev/null
dd_times "$(stat -c %s "$shard")" "$repeats" "$shard" > "$tmp/dd.shard"
"$ds_train" "${args[@]}" --save "$tmp/async" --metrics "$tmp/async.jsonl"
"$ds_ckpt" verify "$tmp/async" >&2

"$PYTHON" - "$tmp" <<'PY' > "$tmp/results"
import json, statistics, sys
tmp = sys.argv[1]
def dd_rate(files):
    runs = [l.split() for f in files for l in open(f"{tmp}/{f}")]
    return statistics.median(int(m) * 2**20 / (float(b) - float(a)) / 1e9
                             for a, b, m in runs), len(runs)
dd_gbps, dd_runs = dd_rate(["dd.before", "dd.after"])
dd_shard_gbps, _ = dd_rate(["dd.shard"])
def load(name):
    return [json.loads(l) for l in open(f"{tmp}/{name}.jsonl")]
sync, async_ = load("sync"), load("async")
saves = [r for r in sync if "checkpoint_bytes" in r]
sync_gbps = statistics.median(r["checkpoint_bytes"] / r["checkpoint_stall_ms"] / 1e6
                              for r in saves)
write_gbps = statistics.median(r["checkpoint_bytes"] / r["checkpoint_write_s"] / 1e9
                               for r in saves)
def stall_pct(rows):
    plain = statistics.median(r["step_ms"] for r in rows
                              if "checkpoint_bytes" not in r and r["step"] > 1)
    by_step = {r["step"]: r for r in rows}
    out = []
    for r in rows:
        if "checkpoint_bytes" not in r:
            continue
        wait = by_step.get(r["step"] + 2, {}).get("checkpoint_copy_wait_ms", 0)
        out.append(100 * (r["checkpoint_stall_ms"] + wait) / plain)
    return statistics.median(out), plain
async_pct, async_step = stall_pct(async_)
sync_pct, sync_step = stall_pct(sync)
during = [r["step_ms"] for r in async_ if r["step"] % 2 == 1 and r["step"] > 1]
other = [r["step_ms"] for r in async_ if r["step"] % 2 == 0]
print(f"sync_save_GBps {sync_gbps} {dd_gbps}")
print(f"sync_shard_write_GBps {write_gbps} {dd_gbps}")
print(f"sync_save_GBps_vs_dd_shard {sync_gbps} {dd_shard_gbps}")
print(f"save_stall_pct_of_step {async_pct} {sync_pct}")
print(f"# {len(saves)} saves of {saves[0]['checkpoint_bytes']} bytes; dd median "
      f"{dd_gbps:.2f} GB/s over {dd_runs} runs (of a shard file: "
      f"{dd_shard_gbps:.2f}); step {sync_step:.1f} ms (sync run), "
      f"{async_step:.1f} ms (async run); async stall {async_pct:.2f}% (target <= 5%); "
      f"async steps while a write is in flight: median {statistics.median(during):.1f} ms "
      f"vs {statistics.median(other):.1f} ms", file=sys.stderr)
PY
while read -r metric ds base; do
  case $metric in
  sync_save_GBps | sync_shard_write_GBps)
    bench_json checkpoint "$metric" "$ds" "$base" "dd if=/dev/zero conv=fsync, same bytes, same directory" 1 ;;
  sync_save_GBps_vs_dd_shard)
    bench_json checkpoint sync_save_GBps "$ds" "$base" "dd if=SHARD conv=fsync, same bytes, same directory" 1 ;;
  save_stall_pct_of_step)
    bench_json checkpoint "$metric" "$ds" "$base" "synchronous save" 0 ;;
  esac
done < "$tmp/results"
