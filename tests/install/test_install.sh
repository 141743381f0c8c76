#!/usr/bin/env bash
# `make install` and `make package` as a user meets them: install the build into a temporary
# prefix, then, from a folder outside the source tree, run the installed attn-bench (--version,
# list, a CPU run of the default preset) and attn-tune; check the installed data, help text and
# completions; build a small C++ project against the installed CMake package (find_package and
# attn_bench_export_dispatch, from a committed results database); and write the .tar.gz and .deb
# packages and look inside them.
#   tests/install/test_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/attn-install-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" > "$work/install.log" || {
  cat "$work/install.log"; fail "cmake --install"; }

cd "$work"  # outside the source tree from here on
case "$(pwd)" in "$source"*) fail "the work folder is inside the source tree";; esac
bench="$prefix/bin/attn-bench"
tune="$prefix/bin/attn-tune"

version=$("$bench" --version)
echo "installed: $version"
[[ "$version" =~ ^attn-bench\ [0-9]+\.[0-9]+\.[0-9]+\ \( ]] || fail "attn-bench --version: $version"
[[ "$("$tune" --version)" == "attn-tune "* ]] || fail "attn-tune --version"

"$bench" list > list.txt
grep -q 'paged_decode.cpu_reference' list.txt || fail "attn-bench list names no CPU variant"
grep -q 'decode-llama3-8b-64x4096' list.txt || fail "attn-bench list names no preset"

# A CPU run of the built-in default preset, into a database here.
ATTN_DB= "$bench" run --cpu --policy screen --max-time 0.5 --db run.db > run.txt 2> run.err || {
  cat run.txt run.err; fail "attn-bench run --cpu"; }
grep -Eq 'paged_decode.cpu_reference +(passed|unstable)' run.txt || {
  cat run.txt; fail "the CPU run did not pass"; }
"$tune" db info --db run.db > info.txt || fail "attn-tune db info on the run's database"

# Data, help text, completions and documentation where the layout says.
share="$prefix/share"
presets_source=$(ls "$source"/workloads/presets/*.json | wc -l)
presets_installed=$(ls "$share"/attn-bench/presets/*.json | wc -l)
[ "$presets_source" -eq "$presets_installed" ] ||
  fail "$presets_installed presets installed of $presets_source"
suites_source=$(ls "$source"/workloads/suites/*.json | wc -l)
suites_installed=$(ls "$share"/attn-bench/suites/*.json | wc -l)
[ "$suites_source" -eq "$suites_installed" ] || fail "$suites_installed suites installed of $suites_source"
cmp -s "$share/attn-bench/workload.schema.json" <("$bench" workload schema) ||
  fail "the installed schema differs from what attn-bench prints"
cmp -s "$share/attn-bench/kernel_spec.schema.json" <("$bench" kernel schema) ||
  fail "the installed kernel spec schema differs from what attn-bench prints"
ls "$share"/attn-bench/traces/chat-sample.csv > /dev/null
grep -q -- '--peer-deadline' "$share/doc/attn-bench/help/attn-bench.txt" ||
  fail "the installed help text misses a flag"
grep -q -- 'export' "$share/doc/attn-bench/help/attn-tune.txt" || fail "attn-tune help text"
for doc in README.md BENCHMARKS.md docs/workload.md; do
  [ -s "$share/doc/attn-bench/$doc" ] || fail "$doc is not installed"
done
for completion in bash-completion/completions/attn-bench bash-completion/completions/attn-tune \
                  zsh/site-functions/_attn-bench zsh/site-functions/_attn-tune; do
  [ -s "$share/$completion" ] || fail "share/$completion is not installed"
done
cmp -s "$share/bash-completion/completions/attn-bench" <("$bench" completion bash) ||
  fail "the installed bash completion differs from what attn-bench prints"
bash --norc --noprofile -c "source '$share/bash-completion/completions/attn-tune' && complete -p attn-tune" \
  > /dev/null || fail "the installed bash completion of attn-tune does not load"

# The carried Google Benchmark library is found beside the installed program, not in the build.
# (Whole outputs into variables: `grep -q` in a pipe under pipefail fails when it exits first.)
libraries=$(ldd "$bench")
benchmark_line=$(grep 'libbenchmark' <<< "$libraries" || true)
if [ -n "$benchmark_line" ]; then
  [[ "$benchmark_line" == *"$prefix/bin/../lib/attn-bench/"* ]] ||
    fail "attn-bench does not load the installed libbenchmark: $benchmark_line"
fi

# A C++ project that finds the package and builds against an exported dispatch header.
mkdir consumer
cat > consumer/CMakeLists.txt <<'CMAKE'
cmake_minimum_required(VERSION 3.21)
project(consumer LANGUAGES CXX)
find_package(attn-bench 0.1 REQUIRED)
attn_bench_export_dispatch(tuned DATABASE ${RESULTS_DB} ARGS --all-devices --family paged_decode)
add_executable(consumer main.cpp)
target_link_libraries(consumer PRIVATE tuned)
CMAKE
cat > consumer/main.cpp <<'CPP'
#include <cstdio>
#include "attn_tuned_dispatch.hpp"
int main() {
  // Each device's table answers a query in its first bucket with that bucket's entry.
  int found = 0;
  for (const attn_tuned::Device& device : attn_tuned::kDevices) {
    const attn_tuned::Entry& e = device.entries[0];
    const attn_tuned::Query q{e.family,    e.batch_max, e.context_max, e.gqa_ratio,
                              e.head_dim,  e.dtype,     e.kv_dtype,    e.page_size};
    if (attn_tuned::select(device, q) == &e) ++found;
  }
  std::printf("%d devices answered\n", found);
  return found == 2 ? 0 : 1;
}
CPP
cmake -S consumer -B consumer/build -DCMAKE_PREFIX_PATH="$prefix" \
  -DRESULTS_DB="$source/docs/reports/2026-11-21-h100-vs-h200/results.db" > consumer.log 2>&1 || {
  cat consumer.log; fail "find_package(attn-bench)"; }
cmake --build consumer/build > consumer-build.log 2>&1 || {
  cat consumer-build.log; fail "the consumer project does not build"; }
./consumer/build/consumer || fail "the consumer found no config"

# The packages.
cpack --config "$build/CPackConfig.cmake" -B "$work/packages" > cpack.log 2>&1 || {
  cat cpack.log; fail "cpack"; }
tarball=$(ls "$work"/packages/attn-bench-*.tar.gz)
tar -tzf "$tarball" > tarball.txt
grep -q '^attn-bench-[^/]*/bin/attn-bench$' tarball.txt || fail "the tarball has no bin/attn-bench"
grep -q '/share/attn-bench/workload.schema.json$' tarball.txt || fail "the tarball has no schema"
deb=$(ls "$work"/packages/attn-bench_*.deb)
if command -v dpkg-deb > /dev/null; then
  dpkg-deb -c "$deb" > deb.txt
  grep -q '\./usr/bin/attn-tune$' deb.txt || fail "the .deb has no usr/bin/attn-tune"
  [ "$(dpkg-deb -f "$deb" Package)" = attn-bench ] || fail "the .deb's package name"
fi
echo "install: ok ($prefix; $(basename "$tarball"), $(basename "$deb"))"
