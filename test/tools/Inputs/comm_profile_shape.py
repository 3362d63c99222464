# Prints the shape of a comm profile: header, then per collective its sizes
# and whether every time is positive and finite.
import json
import math
import sys

p = json.load(open(sys.argv[1]))
print("version", p["version"], "backend", p["backend"], "group_size",
      p["group_size"])
for kind in sorted(p["points"]):
    pts = p["points"][kind]
    ok = all(isinstance(s, float) and s > 0 and math.isfinite(s)
             for _, s in pts)
    print(kind, [b for b, _ in pts], "positive" if ok else "NOT positive")
