# A thin wrapper over CMake. `make run` and `make test` do all the set-up on a fresh machine.
BUILD ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
WORKLOAD ?=

.PHONY: all deps configure build run test test-gpu test-asan fuzz gpu-run install package format clean

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

# Installs the programs, presets, schema, completions, help text, docs and the CMake package under
# PREFIX (default /usr/local): bin/, lib/attn-bench/, share/attn-bench/, share/doc/attn-bench/.
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# attn-bench-VERSION-Linux.tar.gz (relocatable) and attn-bench_VERSION_amd64.deb, in $(BUILD)/packages.
package: build
	cd $(BUILD) && cpack -B packages

test-gpu: build
	ctest --test-dir $(BUILD) --output-on-failure -L gpu

# The CPU tests under AddressSanitizer and UndefinedBehaviorSanitizer (clang, -O1: -O0 made the
# tests five times slower), in their own build folder. ASAN_MODULES names the test modules to
# build and run. CI runs the three that parse untrusted input and write the database (base,
# workloads, results: a few minutes); all six took 37 minutes on a busy 2-core machine, so
# run them by hand before a release (docs/reliability.md has the last such run):
#   make test-asan ASAN_MODULES="base workloads results kernels tuner apps"
ASAN_BUILD ?= build-asan
ASAN_MODULES ?= base workloads results
empty :=
space := $(empty) $(empty)
$(ASAN_BUILD)/build.ninja:
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Asan \
	  -DCMAKE_CXX_FLAGS_ASAN="-O1 -gline-tables-only" -DATTN_SANITIZE=ON

test-asan: deps $(ASAN_BUILD)/build.ninja
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target $(patsubst %,attn_%_tests,$(ASAN_MODULES)) \
	  $(if $(filter apps,$(ASAN_MODULES)),attn-bench attn-tune)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS) \
	  -L '^($(subst $(space),|,$(strip $(ASAN_MODULES))))$$'

# libFuzzer over the workload loader (clang, ASan, UBSan) for FUZZ_SECONDS, from the checked-in
# seed corpus; a crasher fails it (scripts/fuzz.sh, docs/reliability.md).
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
$(FUZZ_BUILD)/build.ninja:
	cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g -DNDEBUG" -DATTN_FUZZ=ON -DBUILD_TESTING=OFF

fuzz: deps $(FUZZ_BUILD)/build.ninja
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target attn_workload_loader_fuzz
	scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# On a GPU machine, over a build carried from here: GPU tests and the decode benchmark.
gpu-run:
	scripts/gpu-run.sh

format:
	find apps base kernels measure tuner workloads results tests \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cuh' \) \
	  | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
