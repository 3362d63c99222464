#!/usr/bin/env python3
"""Helpers of the .pt2 tests that need no torch:

  pt2tool.py truncate IN OUT BYTES     the first BYTES of IN
  pt2tool.py set-version IN OUT MAJOR  IN with models/model.json's schema major set
  pt2tool.py set-shape IN OUT TENSOR AxB...  IN with graph tensor TENSOR's shape set
  pt2tool.py check REFERENCE METRICS   ds-train's losses vs torch's, relative 1e-5
"""
import json
import sys
import zipfile

TOLERANCE = 1e-5


def truncate(src, dst, size):
    with open(src, "rb") as f:
        data = f.read(int(size))
    with open(dst, "wb") as f:
        f.write(data)


def edit_program(src, dst, edit):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith("models/model.json"):
                program = json.loads(data)
                edit(program)
                data = json.dumps(program).encode()
            zout.writestr(info, data)


def set_version(src, dst, major):
    def edit(program):
        program["schema_version"]["major"] = int(major)
    edit_program(src, dst, edit)


def set_shape(src, dst, tensor, dims):
    def edit(program):
        meta = program["graph_module"]["graph"]["tensor_values"][tensor]
        meta["sizes"] = [{"as_int": int(d)} for d in dims.split("x")]
    edit_program(src, dst, edit)


def check(reference, metrics):
    ref = json.load(open(reference))
    want = ref["losses"]
    got = [json.loads(line)["loss"] for line in open(metrics) if '"loss"' in line]
    if len(got) != len(want):
        print(f"FAIL: {len(got)} ds losses, {len(want)} torch losses")
        return 1
    worst = max(abs(a - b) / abs(b) for a, b in zip(got, want))
    ok = worst <= TOLERANCE
    print(f"{len(want)} losses ds vs torch {ref['torch_version']}: max rel err "
          f"{worst:.1e} {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd == "truncate":
        truncate(*args)
    elif cmd == "set-version":
        set_version(*args)
    elif cmd == "set-shape":
        set_shape(*args)
    else:
        sys.exit(check(*args))
