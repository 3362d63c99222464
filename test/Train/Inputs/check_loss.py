"""Checks a ds-train metrics file: the first loss is near ln(vocab) and the
mean of the last 10 losses is below a bound. Usage: FILE FIRST_MIN LAST_MAX"""
import json
import sys

losses = [json.loads(line)["loss"] for line in open(sys.argv[1])]
first_min, last_max = float(sys.argv[2]), float(sys.argv[3])
tail = sum(losses[-10:]) / len(losses[-10:])
print(f"first {losses[0]:.4f} last-10 mean {tail:.4f} over {len(losses)} steps")
if losses[0] < first_min:
    sys.exit(f"first loss {losses[0]} < {first_min}: not an untrained model?")
if tail > last_max:
    sys.exit(f"last-10 mean loss {tail} > {last_max}: training does not learn")
