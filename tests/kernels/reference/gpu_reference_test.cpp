// The naive GPU reference on a machine without a GPU: its per-element rules
// (gpu_reference_params.hpp, compiled here by g++) against the host's own definitions, the host
// tables it uploads, and NVRTC compiles of its kernel for sm_80 and sm_90a. Its output is held to
// the CPU reference's in gpu_reference_gpu_test.cpp.
#include "kernels/reference/gpu_reference.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "base/dtype.hpp"
#include "tests/kernels/reference/reference_feature_batches.hpp"
#include "tests/test_support.hpp"
#include "workloads/batch_data.hpp"
#include "workloads/visibility.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

bool same_float(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || float_to_bits(a) == float_to_bits(b);
}

TEST(GpuReferenceRules, DecodesEveryBitPatternAsTheHostDoes) {
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const uint16_t h = uint16_t(bits);
    ASSERT_TRUE(same_float(gpu_reference_bf16_to_float(h), bf16_to_float(h))) << "bf16 " << bits;
    ASSERT_TRUE(same_float(gpu_reference_fp16_to_float(h), fp16_to_float(h))) << "fp16 " << bits;
  }
  for (uint32_t bits = 0; bits < 0x100u; ++bits) {
    const uint8_t c = uint8_t(bits);
    ASSERT_TRUE(same_float(gpu_reference_e4m3_to_float(c), fp8_e4m3_to_float(c)))
        << "e4m3 " << bits;
  }
  // Spot values, so that a shared mistake of both sides would still show.
  EXPECT_EQ(gpu_reference_fp16_to_float(0x3c00), 1.0f);
  EXPECT_EQ(gpu_reference_fp16_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(gpu_reference_e4m3_to_float(0x7e), 448.0f);
  EXPECT_EQ(gpu_reference_e4m3_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isnan(gpu_reference_e4m3_to_float(0xff)));
}

// gpu_reference_load reads element `index` of an array of the dtype and decodes it as above.
TEST(GpuReferenceRules, LoadDecodesTheIndexedElementOfEachDtype) {
  const uint16_t halves[] = {0x0000, 0x3f80, 0xc000, 0x3c00};
  const uint8_t codes[] = {0x00, 0x38, 0xb8, 0x7e};
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(same_float(gpu_reference_load<kDTypeBf16>(halves, i), bf16_to_float(halves[i])));
    EXPECT_TRUE(same_float(gpu_reference_load<kDTypeFp16>(halves, i), fp16_to_float(halves[i])));
    EXPECT_TRUE(
        same_float(gpu_reference_load<kDTypeFp8E4m3>(codes, i), fp8_e4m3_to_float(codes[i])));
  }
  EXPECT_EQ(gpu_reference_load<kDTypeBf16>(halves, 1), 1.0f);
  EXPECT_EQ(gpu_reference_load<kDTypeFp16>(halves, 3), 1.0f);
  EXPECT_EQ(gpu_reference_load<kDTypeFp8E4m3>(codes, 2), -1.0f);
}

TEST(GpuReferenceRules, KvScaleIsOnePerTensorOrPerHead) {
  const float per_head[] = {0.5f, 2.0f, 4.0f};
  const float per_tensor[] = {3.0f};
  for (int head = 0; head < 3; ++head) {
    EXPECT_EQ(gpu_reference_kv_scale(nullptr, 0, head), 1.0f);
    EXPECT_EQ(gpu_reference_kv_scale(per_tensor, 1, head), 3.0f);
    EXPECT_EQ(gpu_reference_kv_scale(per_head, 3, head), per_head[head]);
  }
}

// Every (sequence, q head, query, key) of a batch, keys one past each end included.
void expect_visibility_matches(const Batch& batch, const std::string& what) {
  const GpuReferenceTables tables = gpu_reference_tables(batch);
  const GpuReferenceMask mask = gpu_reference_host_mask(batch, tables);
  int64_t visible = 0;
  for (int s = 0; s < batch.num_seqs; ++s) {
    const int64_t kv_len = batch.kv_lens[size_t(s)];
    for (int h = 0; h < batch.spec.model.num_q_heads; ++h) {
      for (int64_t i = 0; i < batch.query_lens[size_t(s)]; ++i) {
        for (int64_t j = -1; j <= kv_len; ++j) {
          const bool expected = key_visible(batch, s, h, i, j);
          ASSERT_EQ(gpu_reference_key_visible(mask, s, h, i, j), expected)
              << what << ": seq " << s << " head " << h << " query " << i << " key " << j;
          visible += expected ? 1 : 0;
        }
      }
    }
  }
  EXPECT_EQ(visible, visible_pairs(batch)) << what;
}

TEST(GpuReferenceTables, VisibilityMatchesKeyVisibleOnEveryFeatureBatch) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    for (const testing::FeatureBatch& b : testing::reference_feature_batches(seed)) {
      expect_visibility_matches(b.batch, b.what + " seed " + std::to_string(seed));
    }
  }
}

// Random rules on random lengths: block-sparse layouts of random shape, random explicit masks,
// causal or not, windows or not (an explicit mask excludes a window).
TEST(GpuReferenceTables, VisibilityMatchesKeyVisibleOnRandomBatches) {
  std::mt19937_64 rng(4242);
  auto pick = [&](std::initializer_list<int64_t> values) {
    return *(values.begin() + std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng));
  };
  for (int trial = 0; trial < 40; ++trial) {
    testing::SpecShape shape;
    shape.q_heads = int(pick({1, 2, 4, 6}));
    shape.kv_heads = 1;
    shape.page_size = int(pick({1, 3, 16}));
    shape.seed = rng();
    std::vector<std::pair<int64_t, int64_t>> seqs;
    for (int n = int(pick({1, 2, 4})); n > 0; --n) {
      seqs.push_back({pick({0, 1, 9, 40, 77}), pick({1, 2, 13, 30})});
    }
    WorkloadSpec spec = testing::make_spec(shape, seqs);
    const bool causal = pick({0, 1}) == 1;
    spec.mask.causal = causal;
    const int64_t kind = pick({0, 1, 2});
    if (kind != 2 && pick({0, 1}) == 1) spec.model.sliding_window = pick({1, 5, 33});
    if (kind == 1) {
      BlockSparseSpec sparse;
      sparse.block_size = int(pick({1, 4, 16, 64}));
      sparse.local_blocks = int(pick({1, 3}));
      sparse.vertical_stride = int(pick({1, 2, 5}));
      sparse.head_sliding_step = int(pick({0, 1, 3}));
      sparse.homo_head = pick({0, 1}) == 1;
      spec.mask.block_sparse = sparse;
      spec.mask.causal = true;  // validation asks for it; switched off below as kernel tests do
    } else if (kind == 2) {
      ExplicitMaskSpec mask;
      mask.kind = ExplicitMaskKind::random;
      mask.density = double(pick({5, 20, 70, 100})) / 100.0;
      spec.mask.explicit_mask = mask;
    }
    Batch batch = generate_batch(spec);
    batch.causal = causal;
    expect_visibility_matches(batch, "trial " + std::to_string(trial) + " " + canonical_json(spec) +
                                         (causal ? "" : " (non-causal)"));
  }
}

// The strides and dim table give pool_offset at every element of small pools of every layout,
// both streams, 16-bit and fp8 caches (vLLM's x-packing depends on the element size).
TEST(GpuReferenceTables, PoolAddressingIsPoolOffsetEverywhere) {
  for (KvLayout layout : {KvLayout::nhd, KvLayout::hnd, KvLayout::vllm}) {
    for (DType kv_dtype : {DType::bf16, DType::fp8_e4m3}) {
      for (int head_dim : {64, 80, 128}) {
        if (layout == KvLayout::vllm && kv_dtype == DType::fp8_e4m3 && head_dim == 80) continue;
        testing::SpecShape shape;
        shape.q_heads = 4;
        shape.kv_heads = 2;
        shape.head_dim = head_dim;
        shape.page_size = 5;
        shape.layout = layout;
        WorkloadSpec spec = testing::make_spec(shape, {{7, 3}, {0, 2}});
        if (kv_dtype != DType::bf16) spec.model.kv_dtype = kv_dtype;
        const Batch batch = generate_batch(spec);
        const GpuReferenceTables t = gpu_reference_tables(batch);
        for (DataStream stream : {DataStream::key, DataStream::value}) {
          GpuReferencePool pool = stream == DataStream::key ? t.k_strides : t.v_strides;
          const std::vector<long long>& dims =
              stream == DataStream::key ? t.k_dim_offset : t.v_dim_offset;
          ASSERT_EQ(dims.size(), size_t(head_dim));
          for (int64_t page = 0; page < batch.num_pages; ++page) {
            for (int slot = 0; slot < batch.page_size; ++slot) {
              for (int head = 0; head < 2; ++head) {
                for (int d = 0; d < head_dim; ++d) {
                  ASSERT_EQ(gpu_reference_pool_row(pool, page, slot, head) + dims[size_t(d)],
                            pool_offset(batch, stream, page, slot, head, d))
                      << to_string(layout) << " " << to_string(kv_dtype) << " page " << page
                      << " slot " << slot << " head " << head << " dim " << d;
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST(GpuReferenceTables, RowsFollowTheBatchsSequences) {
  testing::SpecShape shape;
  const Batch batch = generate_batch(testing::make_spec(shape, {{3, 2}, {0, 1}, {9, 4}}));
  const GpuReferenceTables t = gpu_reference_tables(batch);
  EXPECT_EQ(t.seq_of_token, (std::vector<int>{0, 0, 1, 2, 2, 2, 2}));
  EXPECT_EQ(t.cu_seqlens_q, (std::vector<long long>{0, 2, 3, 7}));
  EXPECT_EQ(t.kv_lens, (std::vector<long long>{5, 1, 13}));
  EXPECT_EQ(t.context_lens, (std::vector<long long>{3, 0, 9}));
  const GpuReferenceMask mask = gpu_reference_host_mask(batch, t);
  EXPECT_EQ(mask.has_block_sparse, 0);
  EXPECT_EQ(mask.has_explicit_mask, 0);
  EXPECT_EQ(mask.causal, 1);
}

class GpuReferenceJit : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("attn-gpu-reference-jit-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

bool is_elf(const std::vector<char>& bytes) {
  return bytes.size() > 4 && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' &&
         bytes[3] == 'F';
}

TEST_F(GpuReferenceJit, CompilesForSm80AndSm90aInEveryDtypePair) {
  JitCompiler jit(JitOptions{dir_.string()});
  for (const char* arch : {"sm_80", "sm_90a"}) {
    for (DType dtype : {DType::bf16, DType::fp16}) {
      for (bool fp8 : {false, true}) {
        testing::SpecShape shape;
        shape.dtype = dtype;
        WorkloadSpec spec = testing::make_decode_spec(shape, {5});
        if (fp8) spec.model.kv_dtype = DType::fp8_e4m3;
        const Batch batch = generate_batch(spec);
        const JitProgram program = gpu_reference_program(batch, arch);
        ASSERT_EQ(program.kernels.size(), 1u);
        const CompiledProgram compiled = jit.compile(program);
        EXPECT_TRUE(is_elf(compiled.cubin)) << program.name << " " << arch;
        ASSERT_TRUE(compiled.lowered_names.count(program.kernels.front())) << program.name;
        EXPECT_EQ(compiled.lowered_names.at(program.kernels.front()).rfind("_Z", 0), 0u);
      }
    }
  }
}

}  // namespace
}  // namespace attn
