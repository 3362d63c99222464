# Helpers sourced by the benchmarks in bench/.

# bench_json BENCH METRIC DS BASELINE BASELINE_NAME HIGHER_IS_BETTER(1|0)
# Prints the one JSON line of the convention; ratio > 1 means ds is better.
bench_json() {
  "$PYTHON" - "$@" <<'PY'
import json, sys
bench, metric, ds, base, base_name, higher = sys.argv[1:7]
ds, base = float(ds), float(base)
ratio = ds / base if higher == "1" else base / ds
print(json.dumps({"bench": bench, "metric": metric, "ds": round(ds, 4),
                  "baseline": round(base, 4), "baseline_name": base_name,
                  "ratio": round(ratio, 3)}))
PY
}

# ds_tool NAME: path of a ds tool in $DS_BUILD/bin, or exit with a message.
ds_tool() {
  local tool="$DS_BUILD/bin/$1"
  if [ ! -x "$tool" ]; then
    echo "bench: $tool not found; build it (make build, or DS_BUILD=...)" >&2
    exit 1
  fi
  echo "$tool"
}
