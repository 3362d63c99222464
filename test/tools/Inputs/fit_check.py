"""Checks ds-report's memory fit against what ds-train measures.

usage: fit_check.py REPORT.json CONFIG MODEL OUTDIR
For the job as configured and for each alternative the report planned,
runs ds-train on the report's world size (ds-launch) with the
alternative's change merged into CONFIG (RFC 7386), and compares the
report's planned peak per rank with the peak libdsrt measured
(peak_tracked_bytes, the largest over the steps): whether it is within
10% (the bar issue 37 sets for ds-plan-memory), and whether the
measurement is on the side of the report's memory that the report said
(fits / does not fit: "ok", else "FAIL").
"""
import json
import os
import subprocess
import sys

report_path, config_path, model, outdir = sys.argv[1:5]
fit = json.load(open(report_path))["fit"]
memory, world = fit["memory_per_rank_bytes"], fit["world_size"]


def merge(target, patch):
    if not isinstance(patch, dict):
        return patch
    target = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = merge(target.get(key), value)
    return target


base = json.load(open(config_path))
jobs = [("as configured", {}, fit["planned_peak_bytes"], fit["fits"])]
for a in fit["alternatives"]:
    if "error" not in a:
        jobs.append((a["setting"], a["config"], a["planned_peak_bytes"],
                     a["fits"]))
env = dict(os.environ)
env.pop("DS_MEMORY_BYTES", None)  # measure; do not refuse
for i, (setting, patch, planned, fits) in enumerate(jobs):
    config = merge(base, patch)
    offload = config.get("zero_optimization", {}).get("offload_optimizer")
    if offload and offload.get("device") == "nvme":
        offload["nvme_path"] = os.path.join(outdir, f"nvme{i}")
        os.makedirs(offload["nvme_path"], exist_ok=True)
    cpath = os.path.join(outdir, f"job{i}.json")
    mpath = os.path.join(outdir, f"job{i}.jsonl")
    json.dump(config, open(cpath, "w"))
    subprocess.run(["ds-launch", "--num_procs", str(world), "--", "ds-train",
                    "--model", model, "--config", cpath, "--synthetic",
                    "--steps", "2", "--quiet", "--metrics", mpath],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    measured = max(json.loads(l)["peak_tracked_bytes"] for l in open(mpath))
    off = (planned - measured) / measured
    close = "within 10%" if abs(off) <= 0.10 else "OFF BY MORE THAN 10%"
    said = "fits" if fits else "does not fit"
    agree = "ok" if (measured <= memory) == fits else "FAIL"
    print(f"{setting}: planned {planned} measured {measured} "
          f"({100 * off:+.1f}%, {close}); {said} in {memory}: {agree}")
