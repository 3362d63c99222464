"""fp16-on.py IN OUT: IN's config with fp16 and a scaler that starts high
(2^20) and grows every 4 steps, so a short run overflows and skips steps."""
import json
import sys

config = json.load(open(sys.argv[1]))
config["fp16"] = {"enabled": True, "initial_scale_power": 20,
                  "loss_scale_window": 4}
json.dump(config, open(sys.argv[2], "w"))
