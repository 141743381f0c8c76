# A thin wrapper over CMake. `make run` and `make test` do all the set-up on a fresh machine.
BUILD ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
WORKLOAD ?=

.PHONY: all deps configure build run test test-gpu gpu-run format clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

configure: deps $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# Runs the built-in default workload (or WORKLOAD=path/to/workload.json).
run: build
	$(BUILD)/apps/attn-bench run $(WORKLOAD)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

test-gpu: build
	ctest --test-dir $(BUILD) --output-on-failure -L gpu

# On a GPU machine, over a build carried from here: GPU tests and the decode benchmark.
gpu-run:
	scripts/gpu-run.sh

format:
	find apps base kernels tuner workloads results tests \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cuh' \) \
	  | xargs clang-format -i

clean:
	rm -rf $(BUILD)
