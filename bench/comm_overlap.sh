#!/usr/bin/env bash
# comm_overlap: ZeRO-3 training of the bench GPT (train_single/gpt.json,
# the train_dp config: micro-batch 4 per rank, fp32, AdamW, clipping) on two
# "hosts" joined by a rate-limited link (scripts/multihost/two-hosts.sh
# --agent netns --rate R --slots 1: one rank per host, Open MPI over TCP on
# the veth pair), with communication scheduled (overlap_comm true:
# ds-schedule-comm starts all-gathers early and waits late, gradient
# reductions overlap the backward) against every collective blocking
# (overlap_comm false). Needs root, ip and tc; re-executes itself inside the
# two hosts. One run, JSON lines:
#   step_s_zero3             scheduled vs blocking           (ratio = speedup)
#   step_s_zero3_vs_ideal    scheduled vs max(compute, comm) of the blocking
#                            run, where comm = its median comm_ms (time in
#                            collectives) and compute = step - comm; a ratio
#                            of 1 means all communication hidden
#   step_s_zero3_deepcompile scheduled with compile.deepcompile (selective
#                            unsharding: parameters gathered in the forward
#                            stay to the backward) vs blocking
#   step_s_zero3_deepcompile_vs_ideal  the same vs max(compute, comm)
#   tokens_per_s_zero2_overlap  ZeRO-2, gradient reductions overlapping the
#                            backward (overlap_comm true) vs after it (false)
#   tokens_per_s_zero0_overlap  the same at stage 0 (all-reduce buckets)
#   tokens_per_s_zero0       ds ZeRO-0 vs torch DDP (gloo) over the same link
# Runs alternate blocking, scheduled, deepcompile, as often each, then ZeRO-2
# blocking and overlapped, then ZeRO-0 blocking, overlapped and torch DDP; each drops COMM_OVERLAP_SKIP (3) steps and
# takes the median step of the next COMM_OVERLAP_STEPS (10); a side's
# figure is its best run (the machine is shared: one run of a side can be
# 2x another).
# Environment: COMM_OVERLAP_RATE (1gbit), COMM_OVERLAP_SKIP,
# COMM_OVERLAP_STEPS, COMM_OVERLAP_REPEATS (2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${DS_MH_HOSTFILE:-}" ]; then
  [ "$(id -u)" -eq 0 ] || {
    echo "comm_overlap: needs root (network namespaces and tc)" >&2
    exit 1
  }
  exec "$here/../scripts/multihost/two-hosts.sh" --agent netns \
    --rate "${COMM_OVERLAP_RATE:-1gbit}" --slots 1 -- "$0" "$@"
fi
source "$here/lib.sh"
ds_train=$(ds_tool ds-train)
ds_launch=$(ds_tool ds-launch)
spec=$here/train_single/gpt.json
base_config=$here/train_dp/ds_config.json
skip=${COMM_OVERLAP_SKIP:-3}
measure=${COMM_OVERLAP_STEPS:-10}
repeats=${COMM_OVERLAP_REPEATS:-2}
steps=$((skip + measure))
tmp=$DS_MH_DIR/comm_overlap
mkdir -p "$tmp"
export OPENBLAS_CORETYPE=$bench_blas_core
echo "bench: 2 hosts x 1 rank, link ${COMM_OVERLAP_RATE:-1gbit} (tc tbf)," \
  "$BENCH_THREADS OpenBLAS thread(s) per rank ($bench_blas_core) for ds" \
  "and torch; load $(cut -d' ' -f1 /proc/loadavg)" >&2

for c in "3 true" "3 false" "0 true" "0 false" "2 true" "2 false" \
  "3 deepcompile"; do
  set -- $c
  "$PYTHON" - "$base_config" "$1" "$2" >"$tmp/zero$1_$2.json" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1]))
cfg["zero_optimization"] = {"stage": int(sys.argv[2]),
                            "overlap_comm": sys.argv[3] != "false"}
if sys.argv[3] == "deepcompile":
    cfg["compile"] = {"deepcompile": True}
print(json.dumps(cfg, indent=1))
PY
done

# median FILE FIELD: the median of FIELD over the measured steps.
median() {
  "$PYTHON" - "$1" "$2" "$skip" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(statistics.median(r[sys.argv[2]] for r in rows[int(sys.argv[3]):]))
PY
}

run_ds() { # STAGE OVERLAP N (OVERLAP: true, false or deepcompile)
  local out=$tmp/ds_$1_$2_$3.jsonl what="overlap_comm $2"
  [ "$2" != deepcompile ] || what="overlap_comm true, compile.deepcompile"
  if ! "$ds_launch" --hostfile "$DS_MH_HOSTFILE" -- "$ds_train" \
    --model "$spec" --config "$tmp/zero$1_$2.json" --synthetic \
    --steps "$steps" --quiet --metrics "$out" >"$tmp/ds.log" 2>&1; then
    cat "$tmp/ds.log" >&2
    echo "comm_overlap: ds-train (ZeRO $1, $what) failed" >&2
    exit 1
  fi
  echo "comm_overlap: ds ZeRO $1 $what run $3: step" \
    "$(median "$out" step_ms) ms, in collectives $(median "$out" comm_ms)" \
    "ms (load $(cut -d' ' -f1 /proc/loadavg))" >&2
}

# torch DDP over the same link: one process per host, gloo on the veth
# (or, on real hosts, the interface gloo picks).
run_torch() { # N
  local out=$tmp/torch_ddp_$1.jsonl
  if ! "$ds_launch" --hostfile "$DS_MH_HOSTFILE" -- sh -c \
    'i=$(ls /sys/class/net | grep veth); [ -z "$i" ] ||
     export GLOO_SOCKET_IFNAME=$i; exec "$@"' sh \
    env OPENBLAS_CORETYPE="$bench_blas_core" "$PYTHON" \
    "$here/train_dp/torch_dp.py" ddp "$spec" "$tmp/zero0_true.json" \
    "$BENCH_THREADS" "$steps" "$out" >"$tmp/torch.log" 2>&1; then
    cat "$tmp/torch.log" >&2
    echo "comm_overlap: torch DDP failed" >&2
    exit 1
  fi
  echo "comm_overlap: torch DDP run $1: step $(median "$out" step_ms) ms" \
    "(load $(cut -d' ' -f1 /proc/loadavg))" >&2
}

for n in $(seq "$repeats"); do
  run_ds 3 false "$n"
  run_ds 3 true "$n"
  run_ds 3 deepcompile "$n"
done
for n in $(seq "$repeats"); do
  run_ds 2 false "$n"
  run_ds 2 true "$n"
done
for n in $(seq "$repeats"); do
  run_ds 0 false "$n"
  run_ds 0 true "$n"
  run_torch "$n"
done

"$PYTHON" - "$tmp" "$skip" "$repeats" "$spec" "$base_config" <<'PY' >"$tmp/figures"
import json, statistics, sys
tmp, skip, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
spec, cfg = (json.load(open(p)) for p in sys.argv[4:6])
def rows(path):
    return [json.loads(l) for l in open(path) if l.strip()][skip:]
def med(path, field):
    return statistics.median(r[field] for r in rows(path))
runs = lambda o: [f"{tmp}/ds_3_{o}_{n}.jsonl" for n in range(1, repeats + 1)]
on = min(med(p, "step_ms") for p in runs("true")) / 1e3
dc = min(med(p, "step_ms") for p in runs("deepcompile")) / 1e3
best_off = min(runs("false"), key=lambda p: med(p, "step_ms"))
off = med(best_off, "step_ms") / 1e3
comm = med(best_off, "comm_ms") / 1e3
ideal = max(comm, off - comm)
tokens = cfg["train_batch_size"] * spec["n_positions"]
best = lambda paths: min(med(p, "step_ms") for p in paths) / 1e3
sides = range(1, repeats + 1)
ds_tps = lambda s, o: tokens / best(
    [f"{tmp}/ds_{s}_{o}_{n}.jsonl" for n in sides])
zero0, zero0_off = ds_tps(0, "true"), ds_tps(0, "false")
zero2, zero2_off = ds_tps(2, "true"), ds_tps(2, "false")
torch = tokens / best([f"{tmp}/torch_ddp_{n}.jsonl" for n in sides])
print(on, off, ideal, zero0, torch, dc, zero2, zero2_off, zero0_off)
PY
read -r on off ideal zero0 torch dc zero2 zero2_off zero0_off <"$tmp/figures"
bench_json comm_overlap step_s_zero3 "$on" "$off" "ds overlap_comm false" 0
bench_json comm_overlap step_s_zero3_vs_ideal "$on" "$ideal" \
  "ideal max(compute, comm)" 0
bench_json comm_overlap step_s_zero3_deepcompile "$dc" "$off" \
  "ds overlap_comm false" 0
bench_json comm_overlap step_s_zero3_deepcompile_vs_ideal "$dc" "$ideal" \
  "ideal max(compute, comm)" 0
bench_json comm_overlap tokens_per_s_zero2_overlap "$zero2" "$zero2_off" \
  "ds ZeRO-2 overlap_comm false" 1
bench_json comm_overlap tokens_per_s_zero0_overlap "$zero0" "$zero0_off" \
  "ds ZeRO-0 overlap_comm false" 1
bench_json comm_overlap tokens_per_s_zero0 "$zero0" "$torch" \
  "torch DDP gloo" 1
