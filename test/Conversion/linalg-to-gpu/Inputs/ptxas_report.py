#!/usr/bin/env python3
"""Assembles every PTX object of a GPU-lowered module with ptxas -v.

Reads the module (gpu-module-to-binary format=isa: each gpu.binary holds its
PTX as an `assembly = "..."` string), writes each object's PTX to
DIR/<binary>.ptx, runs `ptxas -arch=<chip> -v` on it, and prints one line per
kernel: name, registers, spill bytes, and any libdevice call left unresolved.
Exits non-zero if ptxas rejects an object.
"""
import os
import re
import subprocess
import sys


def unescape(s):
    # MLIR string escapes: \\, \", \n, \t and \XX (two hex digits).
    out = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        n = s[i + 1]
        if n in "\\\"":
            out += n.encode()
            i += 2
        elif n == "n":
            out += b"\n"
            i += 2
        elif n == "t":
            out += b"\t"
            i += 2
        else:
            out.append(int(s[i + 1:i + 3], 16))
            i += 3
    return out.decode()


def main():
    module, chip, outdir = sys.argv[1], sys.argv[2], sys.argv[3]
    ptxas = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"),
                         "bin", "ptxas")
    os.makedirs(outdir, exist_ok=True)
    text = open(module).read()
    binaries = re.findall(r'gpu\.binary @(\w+)\s*\[#gpu\.object<.*?assembly = "((?:[^"\\]|\\.)*)"', text)
    if not binaries:
        sys.exit("no gpu.binary with PTX in " + module)
    status = 0
    for name, escaped in binaries:
        ptx = unescape(escaped)
        path = os.path.join(outdir, name + ".ptx")
        with open(path, "w") as f:
            f.write(ptx)
        externs = sorted(set(re.findall(r"\.extern \.func[^\n]*?(__nv_\w+)", ptx)))
        run = subprocess.run([ptxas, "-arch=" + chip, "-v", path, "-o",
                              os.path.join(outdir, name + ".cubin")],
                             capture_output=True, text=True)
        if run.returncode != 0:
            print(f"{name}: ptxas failed: {run.stderr.strip()}")
            status = 1
            continue
        # ptxas -v: "Compiling entry function 'k' for 'sm_90'", then
        # "Used N registers" and "... N bytes spill stores, N bytes spill loads".
        for entry, info in re.findall(
                r"Compiling entry function '(\w+)' for '\w+'\n(.*?)(?=ptxas info\s+: Compiling|\Z)",
                run.stderr, re.S):
            regs = re.search(r"Used (\d+) registers", info)
            spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", info)
            print(f"{entry}: {regs.group(1) if regs else '?'} registers, "
                  f"spill stores {spill.group(1) if spill else '?'}, "
                  f"spill loads {spill.group(2) if spill else '?'}, "
                  f"unresolved {','.join(externs) if externs else 'none'}")
    sys.exit(status)


main()
