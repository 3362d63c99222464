"""check_comm_prediction.py METRICS.jsonl TRACE.json

ds-train's per-step comm_pred_ms (predicted exposed communication) and
comm_pred_total_ms (predicted communication) against what ran: the fields
exist and are sane on every step, and the predicted total equals the
documented default cost model (alpha 20 us per ring step, beta 0.8 ns per
byte a rank sends) applied to the collectives rank 0's last step ran, as
the trace records them (name and whole-buffer bytes)."""
import json
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for r in rows:
    for key in ("comm_ms", "comm_pred_ms", "comm_pred_total_ms"):
        if not isinstance(r.get(key), (int, float)) or r[key] < 0:
            sys.exit(f"step {r.get('step')}: {key} = {r.get(key)!r}")
    if r["comm_pred_ms"] > r["comm_pred_total_ms"] * (1 + 1e-9):
        sys.exit(f"step {r['step']}: exposed above total")
if len({(r["comm_pred_ms"], r["comm_pred_total_ms"]) for r in rows}) != 1:
    sys.exit("the prediction changed between steps")
pred, total = rows[-1]["comm_pred_ms"], rows[-1]["comm_pred_total_ms"]

trace = json.load(open(sys.argv[2]))["traceEvents"]
spans = [e for e in trace if e.get("ph") == "X" and e["pid"] == 0]
step = max((e for e in spans if e["name"] == "step"), key=lambda e: e["ts"])
ran = [e for e in spans if e["tid"] >= 2 and step["ts"] <= e["ts"]
       and e["ts"] + e["dur"] <= step["ts"] + step["dur"] + 1]
ranks = 2
ring = {"all_gather": (ranks - 1, (ranks - 1) / ranks),
        "reduce_scatter": (ranks - 1, (ranks - 1) / ranks),
        "all_to_all": (ranks - 1, (ranks - 1) / ranks),
        "all_reduce": (2 * (ranks - 1), 2 * (ranks - 1) / ranks)}
model = sum(ring[e["name"]][0] * 20e-6 +
            ring[e["name"]][1] * e["args"]["bytes"] * 0.8e-9
            for e in ran) * 1e3
print(f"{len(ran)} collectives ran; predicted total {total:.4f} ms, "
      f"model of what ran {model:.4f} ms, predicted exposed {pred:.4f} ms")
ok = ran and abs(total - model) <= 1e-3 * model
print("predicted total matches the collectives that ran" if ok
      else "predicted total DIFFERS from the collectives that ran")
print("some predicted hidden" if pred < total * (1 - 1e-6)
      else "all predicted exposed")
