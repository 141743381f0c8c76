// Guards the acceptance figure: generating the metadata of a 128k-token, 256-sequence
// batch takes well under a second (workloads/bench/ has the micro-benchmark with the numbers).
#include <chrono>

#include <gtest/gtest.h>

#include "workloads/batch.hpp"
#include "workloads/bench/large_batch_spec.hpp"

namespace attn {
namespace {

TEST(GenerationSpeed, A128kToken256SequenceBatchTakesWellUnderASecond) {
  for (PageAllocation allocation : {PageAllocation::sequential, PageAllocation::shuffled,
                                    PageAllocation::fragmented, PageAllocation::shared_prefix}) {
    const WorkloadSpec spec = large_batch_spec(allocation);
    const auto start = std::chrono::steady_clock::now();
    const Batch batch = generate_batch(spec);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(batch.total_kv, 256 * 512);
    EXPECT_EQ(batch.num_seqs, 256);
    // "Well under": a quarter of a second even on a loaded CI machine (measured: about 1 ms).
    EXPECT_LT(seconds, 0.25) << to_string(allocation);
  }
}

}  // namespace
}  // namespace attn
