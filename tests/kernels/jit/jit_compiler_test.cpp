// NVRTC compiles the decode kernel with no GPU present (CI has the toolkit, not a driver).
#include "kernels/jit/jit_compiler.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kernels/device/device_info.hpp"
#include "kernels/registry.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

class JitCompilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attn-jit-test-" + std::to_string(::getpid()) + "-" + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  JitProgram decode_program(int cc_major, DType dtype) {
    testing::SpecShape shape;
    shape.head_dim = 128;
    shape.q_heads = 32;
    shape.kv_heads = 8;
    shape.dtype = dtype;
    batch_ = generate_batch(testing::make_decode_spec(shape, {100, 200}));
    DeviceInfo device;
    device.cc_major = cc_major;
    device.sm_count = 100;
    const Registry registry = make_registry();
    const Variant* sm80_simt = registry.find("paged_decode.sm80_simt");
    const Target target = Target::cuda(device);
    const KernelConfig config = sm80_simt->default_config(batch_, target);
    return sm80_simt->programs(batch_, config, target).front();
  }

  fs::path dir_;
  Batch batch_;
};

bool is_elf(const std::vector<char>& bytes) {
  return bytes.size() > 4 && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' &&
         bytes[3] == 'F';
}

TEST_F(JitCompilerTest, CompilesDecodeKernelForSm80AndSm90a) {
  JitCompiler jit(JitOptions{dir_.string()});
  for (int cc : {8, 9}) {
    for (DType dtype : {DType::bf16, DType::fp16}) {
      const JitProgram program = decode_program(cc, dtype);
      EXPECT_EQ(program.arch, cc == 9 ? "sm_90a" : "sm_80");
      const CompiledProgram compiled = jit.compile(program);
      EXPECT_FALSE(compiled.cache_hit);
      EXPECT_TRUE(is_elf(compiled.cubin)) << program.name;
      ASSERT_EQ(compiled.lowered_names.size(), 2u);
      for (const auto& kernel : program.kernels) {
        ASSERT_TRUE(compiled.lowered_names.count(kernel)) << kernel;
        EXPECT_EQ(compiled.lowered_names.at(kernel).rfind("_Z", 0), 0u);  // a mangled name
      }
    }
  }
}

TEST_F(JitCompilerTest, SecondCompileIsACacheHitWithTheSameBytes) {
  const JitProgram program = decode_program(9, DType::bf16);
  std::vector<char> first;
  {
    JitCompiler jit(JitOptions{dir_.string()});
    first = jit.compile(program).cubin;
  }
  JitCompiler fresh(JitOptions{dir_.string()});  // a new process would see the same files
  const CompiledProgram again = fresh.compile(program);
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.cubin, first);
  EXPECT_EQ(again.lowered_names.size(), 2u);
  // Nothing but finished entries is left in the cache: temporaries were renamed away.
  for (const auto& entry : fs::recursive_directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << entry.path();
  }
}

TEST_F(JitCompilerTest, KeyDependsOnArchSourceAndOptions) {
  JitCompiler jit(JitOptions{dir_.string()});
  const JitProgram base = decode_program(9, DType::bf16);
  JitProgram other_arch = base;
  other_arch.arch = "sm_80";
  JitProgram other_source = base;
  other_source.source += "// changed\n";
  JitProgram other_options = base;
  other_options.options.push_back("-DEXTRA=1");
  EXPECT_EQ(jit.cache_key(base), jit.cache_key(base));
  EXPECT_NE(jit.cache_key(base), jit.cache_key(other_arch));
  EXPECT_NE(jit.cache_key(base), jit.cache_key(other_source));
  EXPECT_NE(jit.cache_key(base), jit.cache_key(other_options));
}

TEST_F(JitCompilerTest, ParallelCompilesAgree) {
  JitCompiler jit(JitOptions{dir_.string(), true, 2});
  const JitProgram program = decode_program(8, DType::fp16);
  auto a = jit.compile_async(program);
  auto b = jit.compile_async(program);
  EXPECT_EQ(a.get().cubin.size() > 0, true);
  EXPECT_TRUE(is_elf(b.get().cubin));
}

TEST_F(JitCompilerTest, CompileErrorKeepsTheLog) {
  JitCompiler jit(JitOptions{dir_.string()});
  JitProgram broken;
  broken.name = "broken";
  broken.source =
      "#include \"kernels/common/warp.cuh\"\n__global__ void k() { undefined_symbol(); }\n";
  broken.arch = "sm_80";
  try {
    jit.compile(broken);
    FAIL() << "expected a CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(e.log().find("undefined_symbol"), std::string::npos) << e.log();
    ASSERT_TRUE(fs::exists(e.log_path())) << e.log_path();
    EXPECT_NE(std::string(e.what()).find(e.log_path()), std::string::npos);
  }
}

TEST_F(JitCompilerTest, StaticAssertMirrorsTheHostRule) {
  // The device template refuses a config the host traits reject (tile not a multiple of rows).
  JitCompiler jit(JitOptions{dir_.string()});
  JitProgram program = decode_program(8, DType::bf16);
  program.kernels = {"attn::paged_decode_sm80_simt<0, 128, 4, 4, 12>"};
  EXPECT_THROW(jit.compile(program), CompileError);
}

// An unusable cache folder is found once, before any compile, with a message naming it.
TEST_F(JitCompilerTest, CacheFolderIsCheckedForCreatingListingAndWriting) {
  const fs::path good = dir_ / "cache";
  EXPECT_NO_THROW(JitCompiler::check_cache_folder(good.string()));
  EXPECT_TRUE(fs::is_directory(good / "failed"));
  size_t entries = 0;
  for (const auto& entry : fs::directory_iterator(good))
    entries += entry.path().filename() != "failed";
  EXPECT_EQ(entries, 0u) << "the write test leaves nothing behind";

  // Under a regular file (no permission bits involved, so this holds for root too).
  fs::create_directories(dir_);
  { std::ofstream(dir_ / "file") << "x"; }
  try {
    JitCompiler::check_cache_folder((dir_ / "file" / "jit").string());
    FAIL() << "a cache folder under a file was accepted";
  } catch (const EnvironmentError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be created"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ATTN_JIT_CACHE_DIR"), std::string::npos) << e.what();
  }

  // A read-only folder; root writes there anyway, so only a non-root run can check it.
  fs::permissions(good, fs::perms::owner_read | fs::perms::owner_exec);
  if (::geteuid() != 0) {
    try {
      JitCompiler::check_cache_folder(good.string());
      FAIL() << "a read-only cache folder was accepted";
    } catch (const EnvironmentError& e) {
      EXPECT_NE(std::string(e.what()).find("is not writable"), std::string::npos) << e.what();
    }
  }
  fs::permissions(good, fs::perms::owner_all);
}

}  // namespace
}  // namespace attn
