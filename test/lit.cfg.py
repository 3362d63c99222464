# -*- Python -*-
import os
import sys

import lit.formats
from lit.llvm import llvm_config

config.name = "ds"

# The format lives in a module so lit's worker processes can unpickle it.
sys.path.insert(0, os.path.dirname(__file__))
from jit_levels import ShTestAtLevels

config.test_format = ShTestAtLevels(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".json"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.ds_obj_root, "test")
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py",
                   "jit_levels.py", "__pycache__"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%ds_src", config.ds_src_root))
config.substitutions.append(("%ds_obj", config.ds_obj_root))
llvm_config.use_default_substitutions()

# ds tools first, then LLVM's FileCheck/not/split-file.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.ds_tools_dir, append_path=True)
# ds-train's compile cache (CompileCache.h) inside the build tree, never the
# user's: tests that are about the cache set their own.
config.environment["DS_COMPILE_CACHE"] = os.path.join(config.ds_obj_root,
                                                      "test", "compile-cache")
tools = ["ds-opt", "ds-report", "ds-import", "ds-run", "ds-train", "ds-launch",
         "ds-ckpt", "ds-compile", "ds-runner", "ds-plot"]
llvm_config.add_tool_substitutions(tools, [config.ds_tools_dir])

# Integration tests say REQUIRES: mpi | cuda | torch.
if config.ds_have_mpi:
    config.available_features.add("mpi")
if config.ds_have_cuda_device:
    config.available_features.add("cuda")
if config.ds_have_torch:
    config.available_features.add("torch")
# TorchScript files from PyTorch 2.x (scaled_dot_product_attention) load in
# a ds-import built against LibTorch 2.x (DS_TORCH_DIR) only: their tests
# say REQUIRES: libtorch2, and are reported unsupported with Debian's 1.13.
if config.ds_have_torch and int((config.ds_torch_version or "0").split(".")[0]) >= 2:
    config.available_features.add("libtorch2")

# GPU targets compile wherever a CUDA toolkit is (REQUIRES: cuda-toolkit,
# reported unsupported elsewhere); what needs the NVIDIA driver itself says
# REQUIRES: cuda-driver, and the no-driver checks UNSUPPORTED: cuda-driver.
llvm_config.with_system_environment(["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"])


def cuda_toolkit_root():
    """The root ds-compile would find (ds/Target/CudaToolkit.h), or None."""
    import shutil
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        if os.environ.get(var):
            root = os.environ[var]
            break
    else:
        ptxas = shutil.which("ptxas", path=config.environment["PATH"])
        root = (os.path.dirname(os.path.dirname(os.path.realpath(ptxas)))
                if ptxas else "/usr/local/cuda")
    return root if os.path.exists(os.path.join(root, "bin", "ptxas")) else None


def cuda_driver_available():
    import ctypes
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


if cuda_toolkit_root():
    config.available_features.add("cuda-toolkit")
    config.substitutions.append(("%cuda_toolkit", cuda_toolkit_root()))
if cuda_driver_available():
    config.available_features.add("cuda-driver")

def cpu_flags():
    """/proc/cpuinfo's flags: the kernel's view of CPUID."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


flags = cpu_flags()

# x86-64 micro-architecture levels this CPU runs: tests of code generated
# for a level (DS_JIT_CPU) say REQUIRES: x86-64-v4 or JIT-LEVELS: ..., and
# are reported unsupported where it cannot run. The levels come from
# ds-report, which asks CPUID as ds-train does: a kernel may leave a flag
# out of /proc/cpuinfo (some show no "abm" where LZCNT runs), so a list
# built from cpuinfo can disagree with what ds-train accepts.
def jit_levels():
    import subprocess
    try:
        out = subprocess.run([os.path.join(config.ds_tools_dir, "ds-report")],
                             capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    for line in out.splitlines():
        if line.startswith("JIT target:") and "levels this CPU runs:" in line:
            levels = line.split("levels this CPU runs:", 1)[1]
            return {l.strip() for l in levels.split(",")} - {"native"}
    # No ds-report (not built yet): the kernel's flags.
    x86_levels = [
        ("x86-64-v2", {"cx16", "lahf_lm", "popcnt", "pni", "sse4_1",
                       "sse4_2", "ssse3"}),
        ("x86-64-v3", {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm",
                       "movbe", "xsave"}),
        ("x86-64-v4", {"avx512f", "avx512bw", "avx512cd", "avx512dq",
                       "avx512vl"}),
    ]
    levels = set()
    for level, needs in x86_levels:
        if not needs <= flags:
            break
        levels.add(level)
    return levels


for level in sorted(jit_levels()):
    config.available_features.add(level)

# BLAS cores (docs/blas.md): the OpenBLAS kernel sets this CPU can run, so
# test/tools/blas-core/ reports the others UNSUPPORTED. OPENBLAS_CORETYPE
# and DS_JIT_CPU reach every test: `OPENBLAS_CORETYPE=Zen make test` runs
# the whole suite on Zen's kernels.
def blas_cores():
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
# Whether OpenBLAS's sgemm on 2 threads gives the bits of 1 thread with
# the kernels the tests run on (OPENBLAS_CORETYPE reaches the probe as it
# reaches ds): true for the AVX-512 cores (SkylakeX, Cooperlake), false for
# Haswell and Zen, whose threaded products sum in another order (measured,
# docs/performance.md "Threads"). Tests that promise bits across thread
# counts with threaded products say REQUIRES: blas-threads-bitwise.
def blas_threads_bitwise():
    import subprocess
    import sys
    probe = r"""
import ctypes, ctypes.util, random, sys
blas = ctypes.CDLL("libopenblas.so.0")
M, N, K = 1000, 300, 257
rnd = random.Random(1)
F = ctypes.c_float
A = (F * (M * K))(*[rnd.uniform(-1, 1) for _ in range(M * K)])
B = (F * (K * N))(*[rnd.uniform(-1, 1) for _ in range(K * N)])
out = []
for n in (1, 2):
    blas.openblas_set_num_threads(n)
    C = (F * (M * N))()
    blas.cblas_sgemm(101, 111, 111, M, N, K, F(1.0), A, K, B, N, F(0.0), C, N)
    out.append(bytes(C))
sys.exit(0 if out[0] == out[1] else 1)
"""
    try:
        return subprocess.run([sys.executable, "-c", probe], capture_output=True,
                              timeout=120).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


if blas_threads_bitwise():
    config.available_features.add("blas-threads-bitwise")

# bf16 dot products (AVX512_BF16): dsrt_gemm_bf16 runs them (oneDNN) unless
# DSRT_BF16_GEMM=f32 says otherwise; tests of that path require the feature.
if "avx512_bf16" in flags and os.environ.get("DSRT_BF16_GEMM", "") != "f32":
    config.available_features.add("avx512-bf16")
for name in ("OPENBLAS_CORETYPE", "DS_JIT_CPU", "DSRT_BF16_GEMM", "ASAN_OPTIONS",
             "UBSAN_OPTIONS", "LSAN_OPTIONS", "LD_PRELOAD"):
    if name in os.environ:
        config.environment[name] = os.environ[name]

# Two hosts on this machine (scripts/multihost/two-hosts.sh): root, network
# namespaces that can really be made here, tc, unshare, Debian's sshd and
# MPI. Tests in test/integration/multihost/ say REQUIRES: multihost and are
# reported unsupported where any is missing.
def multihost_available():
    import shutil
    import subprocess
    if not config.ds_have_mpi or os.geteuid() != 0:
        return False
    if not all(shutil.which(t) for t in ("ip", "tc", "unshare", "ssh",
                                         "ssh-keygen")):
        return False
    if not os.access("/usr/sbin/sshd", os.X_OK):
        return False
    probe = "ds-lit-probe-%d" % os.getpid()
    try:
        made = subprocess.run(["ip", "netns", "add", probe],
                              capture_output=True, timeout=30).returncode == 0
        if made:
            subprocess.run(["ip", "netns", "del", probe], capture_output=True,
                           timeout=30)
        return made
    except (OSError, subprocess.SubprocessError):
        return False


if multihost_available():
    config.available_features.add("multihost")

# Tests that train a model near a billion parameters need the machine's
# memory (two ranks and the PyTorch reference, one after the other): they
# say REQUIRES: memory-20g and are reported unsupported on smaller machines.
def memory_gib():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return 0


if memory_gib() >= 20:
    config.available_features.add("memory-20g")

# Filesystems a test mounts itself (a small tmpfs that fills up, or is
# remounted read-only): root and a private mount namespace (unshare -m), so
# the mount goes away with the test's process even when it fails. Tests say
# REQUIRES: tmpfs-mount and are reported unsupported elsewhere.
def tmpfs_mount_available():
    import subprocess
    import tempfile
    if os.geteuid() != 0:
        return False
    with tempfile.TemporaryDirectory() as d:
        try:
            return subprocess.run(
                ["unshare", "-m", "--propagation", "private", "sh", "-c",
                 "mount -t tmpfs -o size=64k tmpfs " + d],
                capture_output=True, timeout=30).returncode == 0
        except (OSError, subprocess.SubprocessError):
            return False


if tmpfs_mount_available():
    config.available_features.add("tmpfs-mount")
