// The GPU batch fill without a GPU: its program compiles through NVRTC for sm_80 and sm_90a for
// every dtype pairing, and the strides it is given reproduce pool_offset in every layout.
#include "kernels/fill/batch_fill.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/test_support.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

Batch fill_batch(DType dtype, DType kv_dtype, KvLayout layout, int page_size) {
  testing::SpecShape shape;
  shape.q_heads = 4;
  shape.kv_heads = 2;
  shape.head_dim = 128;
  shape.dtype = dtype;
  shape.layout = layout;
  shape.page_size = page_size;
  WorkloadSpec spec = testing::make_spec(shape, {{5, 1}, {30, 4}});
  if (kv_dtype != dtype) spec.model.kv_dtype = kv_dtype;
  return generate_batch(spec);
}

TEST(BatchFill, StridesReproducePoolOffsetInEveryLayout) {
  for (DType kv : {DType::bf16, DType::fp8_e4m3}) {
    for (KvLayout layout : {KvLayout::nhd, KvLayout::hnd, KvLayout::vllm}) {
      for (int page : {1, 7, 16}) {
        const Batch batch = fill_batch(DType::bf16, kv, layout, page);
        for (DataStream s : {DataStream::key, DataStream::value}) {
          const PoolStrides st = pool_strides(batch, s);  // asserts against pool_offset itself
          // vLLM's K is x-packed; with one-token pages the packs are back to back, i.e. plain.
          const bool packed = layout == KvLayout::vllm && s == DataStream::key && page > 1;
          EXPECT_EQ(st.dim_pack, packed ? 16 / int(size_of(kv)) : 128)
              << to_string(layout) << " page " << page;
          EXPECT_EQ(st.page_stride, int64_t(page) * 2 * 128);
        }
      }
    }
  }
}

TEST(BatchFill, ProgramCompilesForSm80AndSm90a) {
  const fs::path dir = fs::temp_directory_path() / ("attn-batch-fill-jit-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  JitCompiler jit(JitOptions{dir.string()});
  const std::pair<DType, DType> pairs[] = {{DType::bf16, DType::bf16},
                                           {DType::fp16, DType::fp16},
                                           {DType::bf16, DType::fp8_e4m3},
                                           {DType::fp16, DType::fp8_e4m3}};
  for (const auto& [dtype, kv] : pairs) {
    const Batch batch = fill_batch(dtype, kv, KvLayout::nhd, 16);
    for (const char* arch : {"sm_80", "sm_90a"}) {
      const JitProgram program = batch_fill_program(batch, arch);
      const CompiledProgram compiled = jit.compile(program);
      EXPECT_GT(compiled.cubin.size(), 4u) << program.name << " " << arch;
      for (const auto& kernel : program.kernels)
        EXPECT_TRUE(compiled.lowered_names.count(kernel)) << kernel;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attn
