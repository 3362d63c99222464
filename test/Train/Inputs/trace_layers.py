"""Prints the layer spans of each step of a `ds-train --trace` file, in
time order: one line for the forward spans, one for the backward ones.

Usage: trace_layers.py TRACE.json [--rank R]

A step's layers are the forward/backward spans of rank R (default 0) that
start inside its "step" span.
"""
import argparse
import json


def main():
    p = argparse.ArgumentParser()
    p.add_argument("trace")
    p.add_argument("--rank", type=int, default=0)
    a = p.parse_args()
    doc = json.load(open(a.trace))
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    mine = sorted((e for e in events
                   if e.get("ph") == "X" and e.get("pid") == a.rank),
                  key=lambda e: e["ts"])
    steps = [e for e in mine if e["cat"] == "step"]
    for n, step in enumerate(steps, 1):
        inside = [e for e in mine
                  if step["ts"] <= e["ts"] < step["ts"] + step["dur"]]
        for cat in ("forward", "backward"):
            names = [e["name"] for e in inside if e["cat"] == cat]
            print("step %d %s: %s" % (n, cat, " ".join(names)))


if __name__ == "__main__":
    main()
