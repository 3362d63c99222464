"""Checks ds-train's memory metrics against the plan and the budget.

Usage: check_peak_memory.py RANKS METRICS.jsonl [BASELINE.jsonl]

For every step of every rank (rank r > 0 writes NAME.rank<r>.jsonl):
  - peak_tracked_bytes (libdsrt's count: arguments, results, arenas, heap
    buffers) is within 10% of planned_peak_bytes (ds-plan-memory);
  - it is at most the default memory budget of ds-schedule-comm, 90% of
    the machine's memory over the ranks on this host.
And the resident set: peak_rss_bytes (getrusage) is within 10% of
planned_rss_bytes, the step's planned peak (less what an NVMe offload
keeps in files) plus process_bytes, what the process held before its
first step (code, libraries, the compiler, the runtime, the data: its
resident set then, less the step's tensors' pages in memory), with the
step's share of the plan printed (at GPT-tiny the process is nearly all).
With BASELINE (the same run without ds-schedule-comm), the plan predicts
the difference between the two peaks (prefetched gathers add to it; the
last micro-batch's gradients reduced as they are made, instead of kept
for a reduction after the loop, take from it) with the same sign, and
within 20% of the measured peak: each peak is within 10% of its plan, and
the plan's liveness simulation and ds-plan-buffers' packing of the arena
can each be off that much, in opposite directions.
"""
import json
import os
import sys

ranks = int(sys.argv[1])
budget = 0.9 * os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / ranks


def lines(path):
    out = []
    for r in range(ranks):
        p = path if r == 0 else path.replace(".jsonl", f".rank{r}.jsonl")
        out += [json.loads(l) for l in open(p)]
    return out


run = lines(sys.argv[2])
assert len(run) >= ranks, f"{len(run)} metrics lines for {ranks} ranks"
worst = 0.0
for m in run:
    measured, planned = m["peak_tracked_bytes"], m["planned_peak_bytes"]
    assert measured > 0 and planned > 0, m
    worst = max(worst, abs(measured - planned) / planned)
    if measured > budget:
        print(f"OVER BUDGET: rank {m['rank']} step {m['step']}: {measured} > {budget:.0f}")
print(f"measured {run[0]['peak_tracked_bytes']} B, planned {run[0]['planned_peak_bytes']} B")
print("peak within 10% of the plan" if worst <= 0.10 else f"OFF by {worst:.1%}")
print("within the memory budget" if all(m["peak_tracked_bytes"] <= budget for m in run) else "BUDGET BROKEN")

worst_rss, share = 0.0, 1.0
for m in run:
    worst_rss = max(worst_rss, abs(m["peak_rss_bytes"] - m["planned_rss_bytes"]) / m["peak_rss_bytes"])
    share = min(share, 1 - m["process_bytes"] / m["planned_rss_bytes"])

if len(sys.argv) > 3:
    base = lines(sys.argv[3])
    dm = run[-1]["peak_tracked_bytes"] - base[-1]["peak_tracked_bytes"]
    dp = run[-1]["planned_peak_bytes"] - base[-1]["planned_peak_bytes"]
    print(f"scheduling changes the peak by {dm} B measured, {dp} B planned")
    ok = (dm > 0) == (dp > 0) and abs(dm - dp) <= 0.20 * run[-1]["peak_tracked_bytes"]
    print("the plan follows the schedule" if ok else "PLAN MISSES THE SCHEDULE")

print(f"the step is {share:.0%} of the planned resident set or more")
print("peak RSS within 10% of the plan with the process" if worst_rss <= 0.10 else f"RSS OFF by {worst_rss:.1%}")
