"""Checks a `ds-train --trace` file against the Trace Event Format (the JSON
chrome://tracing and Perfetto load) and reports what the timeline shows.

Usage: check_trace.py TRACE.json --ranks N --layers h.0,h.1 [--checkpoint]

Prints one line per finding; exits 1 with "error: ..." on a malformed trace.
"""
import argparse
import collections
import json
import sys


def fail(msg):
    print("error: " + msg)
    sys.exit(1)


def spans_of(events):
    """Complete spans (ph X) plus B/E pairs matched per (pid, tid)."""
    spans, open_ = [], collections.defaultdict(list)
    for e in events:
        ph = e.get("ph")
        if ph == "X":
            if not isinstance(e.get("ts"), (int, float)) or \
                    not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0:
                fail("X event without a numeric ts and dur >= 0: %r" % e)
            spans.append(dict(e, end=e["ts"] + e["dur"]))
        elif ph == "B":
            open_[(e["pid"], e["tid"])].append(e)
        elif ph == "E":
            stack = open_[(e["pid"], e["tid"])]
            if not stack:
                fail("E event without its B: %r" % e)
            b = stack.pop()
            spans.append(dict(b, ph="X", dur=e["ts"] - b["ts"], end=e["ts"]))
        elif ph != "M":
            fail("unexpected phase %r" % ph)
    for key, stack in open_.items():
        if stack:
            fail("B event without its E on pid/tid %r" % (key,))
    return spans


def check_nesting(spans):
    """A viewer stacks the spans of one thread: they must nest, not cross."""
    by_thread = collections.defaultdict(list)
    for s in spans:
        by_thread[(s["pid"], s["tid"])].append(s)
    for key, ss in by_thread.items():
        ss.sort(key=lambda s: (s["ts"], -s["dur"]))
        stack = []
        for s in ss:
            while stack and stack[-1]["end"] <= s["ts"]:
                stack.pop()
            if stack and s["end"] > stack[-1]["end"] + 1e-3:
                fail("spans %r and %r cross on pid/tid %r" %
                     (stack[-1]["name"], s["name"], key))
            stack.append(s)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("trace")
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--layers", required=True)
    p.add_argument("--checkpoint", action="store_true")
    a = p.parse_args()
    try:
        doc = json.load(open(a.trace))
    except ValueError as e:
        fail("not JSON: %s" % e)
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list) or not events:
        fail("no traceEvents list")
    spans = spans_of(events)
    check_nesting(spans)
    print("well-formed: %d spans" % len(spans))

    pids = sorted({s["pid"] for s in spans})
    if pids != list(range(a.ranks)):
        fail("ranks with events: %r, expected 0..%d" % (pids, a.ranks - 1))
    names = {m["pid"]: m["args"]["name"] for m in events
             if m.get("ph") == "M" and m.get("name") == "process_name"}
    print("ranks: %s" % ", ".join(names.get(r, "?") for r in pids))

    layers = a.layers.split(",")
    for r in pids:
        mine = [s for s in spans if s["pid"] == r]
        have = {(s["cat"], s["name"]) for s in mine}
        for layer in layers:
            if ("forward", layer) not in have:
                fail("rank %d: no forward span of layer %s" % (r, layer))
            if ("backward", layer + ".backward") not in have:
                fail("rank %d: no backward span of layer %s" % (r, layer))
        cats = {s["cat"] for s in mine}
        wanted = ["step", "optimizer"] + (["checkpoint"] if a.checkpoint else [])
        for cat in wanted:
            if cat not in cats:
                fail("rank %d: no %s span" % (r, cat))
        kinds = sorted({s["name"] for s in mine
                        if s["cat"] in ("collective", "blocking")})
        print("rank %d: layers forward+backward, %s, collectives %s" %
              (r, " ".join(wanted), " ".join(kinds)))

    # Collectives run on their own threads; overlap = an all-gather's
    # [start, completion] crossing a layer's compute span on the same rank.
    overlapping, gathers = 0, 0
    for r in pids:
        compute = [s for s in spans if s["pid"] == r and
                   s["cat"] in ("forward", "backward")]
        for g in spans:
            if g["pid"] != r or g["name"] != "all_gather" or \
                    g["cat"] not in ("collective", "blocking"):
                continue
            gathers += 1
            if g["tid"] == compute[0]["tid"]:
                fail("all-gather on the compute thread")
            if any(g["ts"] < c["end"] and c["ts"] < g["end"] for c in compute):
                overlapping += 1
    print("all-gathers: %d, overlapping compute: %s" %
          (gathers, "some" if overlapping else "none"))


if __name__ == "__main__":
    main()
