// Every variant's work() is the batch's minimum traffic for where its family reads K/V from (the
// page table for paged_decode, prefix_prefill and mla_decode, per-sequence buffers for flash_fwd
// and blocksparse), and its FLOPs are 4 x head_dim x the visible pairs of the same visibility.
#include <gtest/gtest.h>

#include "kernels/registry.hpp"
#include "workloads/traffic.hpp"
#include "workloads/visibility.hpp"

namespace attn {
namespace {

// A decode batch with a window and a shared prefix: the logical and unique bytes differ, and both
// are far below the whole cache.
Batch windowed_shared_decode() {
  WorkloadSpec spec;
  spec.name = "work";
  spec.model.num_q_heads = 8;
  spec.model.num_kv_heads = 2;
  spec.model.head_dim = 64;
  spec.model.sliding_window = 200;
  spec.kv_cache.allocation = PageAllocation::shared_prefix;
  spec.kv_cache.shared_prefix = SharedPrefixSpec{960, 4};
  SequenceSpec seq;
  seq.context_len = LengthSpec(1000);
  seq.count = 8;
  spec.sequences = {seq};
  return generate_batch(spec);
}

KvStorage storage_of(Family family) {
  const bool paged = family == Family::paged_decode || family == Family::prefix_prefill ||
                     family == Family::mla_decode;
  return paged ? KvStorage::paged : KvStorage::contiguous;
}

TEST(VariantWork, IsTheMinimumTrafficOfItsStorageAndTheVisiblePairs) {
  const Registry registry = make_registry();
  const Batch batch = windowed_shared_decode();
  const double flops = 4.0 * 64 * double(visible_pairs(batch));
  ASSERT_GT(registry.variants().size(), 10u);
  for (const auto& v : registry.variants()) {
    SCOPED_TRACE(v->name());
    const MinimumTraffic traffic = minimum_traffic(batch, storage_of(v->family()));
    const Work work = v->work(batch);
    EXPECT_DOUBLE_EQ(work.bytes, traffic.bytes());
    EXPECT_DOUBLE_EQ(work.unique_bytes, traffic.unique_bytes());
    EXPECT_DOUBLE_EQ(work.flops, flops);
  }
}

TEST(VariantWork, AWindowReadsOnlyItsRowsAndSharedPagesCountOnceInMemory) {
  const Registry registry = make_registry();
  const Batch batch = windowed_shared_decode();
  const Work work = registry.find("paged_decode.sm80_simt")->work(batch);
  // Each of 8 sequences reads its last 200 keys of 1001 for 2 kv heads, K and V, bf16.
  const double kv = 2.0 * 8 * 200 * 2 * 64 * 2;
  const double whole_cache = 2.0 * double(batch.total_kv) * 2 * 64 * 2;
  EXPECT_GT(work.bytes, kv);
  EXPECT_LT(work.bytes, 0.25 * whole_cache);
  // The window (keys 801..1000) starts inside the 960-token shared prefix: keys 801..959 of the
  // 4 sequences of a group are the same rows in memory.
  EXPECT_LT(work.unique_bytes, work.bytes);
  EXPECT_DOUBLE_EQ(work.bytes - work.unique_bytes, 2.0 * (8 - 2) * 159 * 2 * 64 * 2);
}

}  // namespace
}  // namespace attn
