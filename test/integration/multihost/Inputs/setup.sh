# Sourced by the multihost tests, on host A of two-hosts.sh, with the test's
# directory as $1: the ZeRO-2 config, absolute tool paths (ranks on host B
# run in an ssh session with the default PATH) and the .deepspeed_env that
# every rank on both hosts gets.
set -eu
T=$1
SRC=$(cd "$(dirname "$0")/../../../.." && pwd)
mkdir -p "$T" && cd "$T"
LAUNCH=$(command -v ds-launch)
TRAIN=$(command -v ds-train)
MODEL=$SRC/examples/models/gpt-tiny.json
sed "s/STAGE/2/" "$SRC/test/Distributed/Inputs/zero.json" > z2.json
# The compile cache of the test run, and the BLAS core of this shell: a rank
# started over ssh inherits neither, and another OpenBLAS core rounds
# differently. Under make test-sanitize, its sanitizer settings too, so a
# rank on host B is judged as one on host A (suppressions, kept modules).
{
  echo "DS_COMPILE_CACHE=$DS_COMPILE_CACHE"
  env | grep -E '^(OPENBLAS_CORETYPE|ASAN_OPTIONS|LSAN_OPTIONS|UBSAN_OPTIONS|LD_PRELOAD)=' || true
  echo "DS_MARK=from .deepspeed_env"
} > .deepspeed_env
# ds-train ZeRO-2 on the tiny GPT, bitwise reproducible.
TRAIN_ARGS="--model $MODEL --config z2.json --synthetic --quiet --deterministic"
