// Micro-benchmark of generate_batch (metadata only: lengths, page tables, slot mapping; no
// tensor data) on the 128k-token, 256-sequence batch under each page allocation, plus
// one 128k-token sequence. Not run by ctest; tests/workloads/generation_speed_test.cpp guards
// the figure. Run: build/workloads/bench/attn_workload_bench
#include <benchmark/benchmark.h>

#include "workloads/batch.hpp"
#include "workloads/bench/large_batch_spec.hpp"

namespace attn {
namespace {

void generate(benchmark::State& state, WorkloadSpec spec) {
  int64_t pages = 0;
  for (auto _ : state) {
    Batch batch = generate_batch(spec);
    pages = batch.num_pages;
    benchmark::DoNotOptimize(batch.page_indices.data());
  }
  state.counters["pages"] = double(pages);
}

void BM_Sequential(benchmark::State& s) {
  generate(s, large_batch_spec(PageAllocation::sequential));
}
void BM_Shuffled(benchmark::State& s) {
  generate(s, large_batch_spec(PageAllocation::shuffled));
}
void BM_Fragmented(benchmark::State& s) {
  generate(s, large_batch_spec(PageAllocation::fragmented));
}
void BM_SharedPrefix(benchmark::State& s) {
  generate(s, large_batch_spec(PageAllocation::shared_prefix));
}
void BM_ShuffledLognormal(benchmark::State& s) {
  generate(s, large_batch_spec(PageAllocation::shuffled, true));
}
void BM_OneLongSequence(benchmark::State& s) {
  WorkloadSpec spec = large_batch_spec(PageAllocation::shuffled);
  spec.sequences = {{131071, 1, 1}};
  generate(s, spec);
}

BENCHMARK(BM_Sequential)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Shuffled)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Fragmented)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SharedPrefix)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ShuffledLognormal)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_OneLongSequence)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace attn

BENCHMARK_MAIN();
