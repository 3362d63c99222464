"""Counts, on rank 0 of a ds-train --trace file, the gradient bucket
all-reduces (more than 100 bytes) and how many of them ran while a backward
layer span computed."""
import json
import sys

events = json.load(open(sys.argv[1]))
if isinstance(events, dict):
    events = events["traceEvents"]
spans = [e for e in events if e.get("pid") == 0 and e.get("ph") == "X"]
backward = [(e["ts"], e["ts"] + e["dur"]) for e in spans
            if e.get("cat") == "backward"]
buckets = [e for e in spans if e.get("name") == "all_reduce"
           and e.get("cat") in ("collective", "blocking")
           and e.get("args", {}).get("bytes", 0) > 100]
under = sum(1 for e in buckets
            if any(a < e["ts"] + e["dur"] and e["ts"] < b for a, b in backward))
print("bucket all-reduces: %d, under a backward layer: %d"
      % (len(buckets), under))
