# -*- Python -*-
import os
import lit.formats
from lit.llvm import llvm_config

config.name = "ds"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".json"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.ds_obj_root, "test")
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%ds_src", config.ds_src_root))
config.substitutions.append(("%ds_obj", config.ds_obj_root))
llvm_config.use_default_substitutions()

# ds tools first, then LLVM's FileCheck/not/split-file.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.ds_tools_dir, append_path=True)
tools = ["ds-opt", "ds-report", "ds-import", "ds-run", "ds-train", "ds-launch",
         "ds-ckpt"]
llvm_config.add_tool_substitutions(tools, [config.ds_tools_dir])

# Integration tests say REQUIRES: mpi | cuda | torch.
if config.ds_have_mpi:
    config.available_features.add("mpi")
if config.ds_have_cuda_device:
    config.available_features.add("cuda")
if config.ds_have_torch:
    config.available_features.add("torch")

# BLAS cores (docs/blas.md): the OpenBLAS kernel sets this CPU can run, from
# /proc/cpuinfo's flags, so test/tools/blas-core/ reports the others
# UNSUPPORTED. OPENBLAS_CORETYPE reaches every test: `OPENBLAS_CORETYPE=Zen
# make test` runs the whole suite on Zen's kernels.
def blas_cores():
    try:
        with open("/proc/cpuinfo") as f:
            line = next((l for l in f if l.startswith("flags")), "")
    except OSError:
        return []
    flags = set(line.split(":", 1)[-1].split())
    cores = ["prescott"] if "pni" in flags else []  # pni: SSE3
    if "avx" in flags:
        cores.append("sandybridge")
    if {"avx2", "fma"} <= flags:
        cores += ["haswell", "zen"]
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        cores.append("skylakex")
    return cores

for core in blas_cores():
    config.available_features.add("blas-core-" + core)
if "OPENBLAS_CORETYPE" in os.environ:
    config.environment["OPENBLAS_CORETYPE"] = os.environ["OPENBLAS_CORETYPE"]
