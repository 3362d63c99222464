"""Checks csv_monitor's files against the metrics JSONL of the same run.

    check_csv_monitor.py METRICS.jsonl CSV_DIR TRAIN_BATCH_SIZE RUNS

DeepSpeed's layout (deepspeed/monitor/csv_monitor.py and the engine's
events): one file per event, "step,<name>" header once per process (RUNS
processes appended), rows "global samples,value" in Python's float repr,
\\r\\n line ends (Python's csv module). The breakdown fields are each >= 0,
sum to at most step_ms, and the backward file holds bwd_inner +
bwd_allreduce as DeepSpeed's backward timer does.
"""
import json
import os
import sys

metrics_path, csv_dir, batch, runs = sys.argv[1], sys.argv[2], int(
    sys.argv[3]), int(sys.argv[4])
rows = [json.loads(l) for l in open(metrics_path)]
fp16 = "loss_scale" in rows[0]
breakdown = "forward_ms" in rows[0]

expected = {
    "train_loss": [r["loss"] for r in rows],
    "lr": [r["lr"] for r in rows],
}
if fp16:
    expected["loss_scale"] = [r["loss_scale"] for r in rows]
if breakdown:
    expected.update({
        "elapsed_time_ms_forward": [r["forward_ms"] for r in rows],
        "elapsed_time_ms_backward":
        [r["backward_ms"] + r["reduction_ms"] for r in rows],
        "elapsed_time_ms_backward_inner": [r["backward_ms"] for r in rows],
        "elapsed_time_ms_backward_allreduce": [r["reduction_ms"] for r in rows],
        "elapsed_time_ms_step": [r["optimizer_ms"] for r in rows],
    })
    for r in rows:
        parts = [r[k] for k in ("forward_ms", "backward_ms", "reduction_ms",
                                "optimizer_ms")]
        assert all(p >= 0 for p in parts), r
        assert sum(parts) <= r["step_ms"], r
        assert r["forward_ms"] > 0 and r["backward_ms"] > 0, r
        assert r["optimizer_ms"] > 0, r

files = sorted(os.listdir(csv_dir))
want = sorted(f"Train_Samples_{name}.csv" for name in expected)
assert files == want, (files, want)
for name, values in expected.items():
    raw = open(os.path.join(csv_dir, f"Train_Samples_{name}.csv"), "rb").read()
    assert raw.endswith(b"\r\n") and b"\n" not in raw.replace(b"\r\n", b""), name
    lines = raw.decode().split("\r\n")[:-1]
    header = f"step,{name}"
    assert lines.count(header) == runs and lines[0] == header, (name, lines[:2])
    body = [l for l in lines if l != header]
    assert len(body) == runs * len(values), (name, len(body))
    for k, line in enumerate(body[-len(values):]):
        step, value = line.split(",")
        assert int(step) == (k + 1) * batch, (name, line)
        # Python's own repr is the oracle for the number's text.
        assert value == repr(float(value)), (name, line)
        assert float(value) == values[k], (name, line, values[k])
print(f"csv_monitor: {len(files)} files, {len(values)} rows each, "
      f"equal to the metrics" + (", breakdown within step_ms" if breakdown
                                 else ""))
