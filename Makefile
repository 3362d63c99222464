# The two commands of the README: `make demo` and `make test`.
# Both install what they need, configure, build, then run their job.
BUILD ?= build
JOBS ?= $(shell nproc)
# A clean clone in another folder still hits the same ccache entries.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

.PHONY: all deps configure build test demo docs format clean

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

demo: build
	@examples/demo.sh $(BUILD)

# Regenerates the committed dialect/pass docs from ODS.
docs: build
	ninja -C $(BUILD) ds-docs
	rm -rf docs/generated && cp -r $(BUILD)/docs/generated docs/generated

format:
	git ls-files '*.cpp' '*.h' '*.c' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
