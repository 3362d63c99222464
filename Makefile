# The two commands of the README: `make demo` and `make test`.
# Both install what they need, configure, build, then run their job.
BUILD ?= build
JOBS ?= $(shell nproc)
# A clean clone in another folder still hits the same ccache entries.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

.PHONY: all deps configure build test demo docs format clean fuzz test-sanitize test-torch2

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/build.ninja: | deps
	cmake -G Ninja -S . -B $(BUILD)

configure: $(BUILD)/build.ninja

build: deps configure
	ninja -C $(BUILD) -j $(JOBS)

test: build
	@scripts/run-tests.sh $(BUILD)

# torch 2.x from a virtualenv (.venv-torch2, or TORCH2_PYTHON): regenerate
# the .pt2 fixtures, import and train them against torch; build ds-import
# and ds-train against its LibTorch (TORCH2_BUILD) and do the same with
# torch.jit.trace files; measure (issue 41).
TORCH2_BUILD ?= build-torch2
test-torch2: build
	@JOBS=$(JOBS) scripts/test-torch2.sh $(BUILD) $(TORCH2_BUILD)

demo: build
	@examples/demo.sh $(BUILD)

# Regenerates the committed dialect/pass docs from ODS.
docs: build
	ninja -C $(BUILD) ds-docs
	rm -rf docs/generated && cp -r $(BUILD)/docs/generated docs/generated

# Sanitizers and fuzzing (docs/fuzzing.md): clang with ASan + UBSan in a
# build of its own; not part of `make test`. -O1 (NDEBUG as libMLIR's):
# the usual level under ASan, and the full build compiles much faster.
SAN_BUILD ?= build-sanitize
FUZZ_SECONDS ?= 60
FUZZ_RUNS ?= 0
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
  -fno-omit-frame-pointer -gline-tables-only -fsanitize=fuzzer-no-link

$(SAN_BUILD)/build.ninja:
	@scripts/install-deps.sh sanitize
	CC=clang-22 CXX=clang++-22 cmake -G Ninja -S . -B $(SAN_BUILD) -DDS_FUZZ=ON \
	  -DCMAKE_C_FLAGS="$(SAN_FLAGS)" -DCMAKE_CXX_FLAGS="$(SAN_FLAGS)" \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG"

test-sanitize: $(SAN_BUILD)/build.ninja
	ninja -C $(SAN_BUILD) -j $(JOBS)
	@scripts/run-tests.sh $(SAN_BUILD) sanitize

fuzz: $(SAN_BUILD)/build.ninja
	ninja -C $(SAN_BUILD) -j $(JOBS) ds-fuzzers
	@FUZZ_RUNS=$(FUZZ_RUNS) scripts/run-fuzz.sh $(SAN_BUILD) $(FUZZ_SECONDS)

format:
	git ls-files '*.cpp' '*.h' '*.c' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
