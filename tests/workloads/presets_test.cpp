#include "workloads/presets.hpp"

#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "base/errors.hpp"
#include "workloads/batch.hpp"

namespace attn {
namespace {

TEST(PresetTest, NamesAreTheSortedFileStems) {
  std::vector<std::string> names = preset_names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(names.size(), kWorkloadPresets_count);
  EXPECT_NE(std::find(names.begin(), names.end(), "default"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "decode-llama3-8b-64x4096"), names.end());
  EXPECT_EQ(kWorkloadPresets[kWorkloadPresets_count].name, nullptr);  // the sentinel
}

TEST(PresetTest, EveryPresetParsesAndGeneratesABatch) {
  for (const std::string& name : preset_names()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(preset_text(name).has_value());
    WorkloadSpec spec = load_preset(name);
    EXPECT_FALSE(spec.name.empty());
    // Canonical round trip.
    EXPECT_EQ(canonical_json(parse_workload(canonical_json(spec), "canonical")),
              canonical_json(spec));
    Batch batch = generate_batch(spec);
    EXPECT_GT(batch.num_seqs, 0);
  }
}

TEST(PresetTest, DecodeLlama3Preset) {
  WorkloadSpec spec = load_preset("decode-llama3-8b-64x4096");
  EXPECT_EQ(spec.model.num_q_heads, 32);
  EXPECT_EQ(spec.model.num_kv_heads, 8);
  EXPECT_EQ(spec.model.head_dim, 128);
  EXPECT_EQ(spec.model.dtype, DType::bf16);
  EXPECT_EQ(spec.kv_cache.page_size, 16);
  EXPECT_EQ(spec.kv_cache.layout, KvLayout::nhd);
  EXPECT_EQ(spec.kv_cache.allocation, PageAllocation::shuffled);
  Batch b = generate_batch(spec);
  EXPECT_EQ(b.num_seqs, 64);
  EXPECT_TRUE(b.decode_only());
  EXPECT_EQ(b.max_kv_len(), 4097);
  EXPECT_EQ(b.num_pages, 64 * 257 + 1);
}

TEST(PresetTest, DefaultPresetIsSmall) {
  Batch b = generate_batch(load_preset("default"));
  EXPECT_TRUE(b.decode_only());
  EXPECT_LT(b.total_kv, 10000);
}

TEST(PresetTest, UnknownPresetListsTheKnownOnes) {
  EXPECT_FALSE(preset_text("nope").has_value());
  EXPECT_FALSE(preset_text("").has_value());
  try {
    load_preset("nope");
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("\"nope\""), std::string::npos) << what;
    EXPECT_NE(what.find("default"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace attn
