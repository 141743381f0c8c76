// The calibration kernels and the clock probe compile through NVRTC with no GPU present (CI has
// the toolkit, not a driver), for Hopper (sm_90a) and for the sm_80 class.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "base/errors.hpp"
#include "measure/calibration.hpp"
#include "measure/clock_probe.hpp"
#include "measure/stream_program.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

class CalibrationPrograms : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attn-calibrate-jit-" + std::to_string(::getpid()) + "-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void expect_compiles(JitCompiler& jit, const JitProgram& program) {
    try {
      const CompiledProgram compiled = jit.compile(program);
      EXPECT_GT(compiled.cubin.size(), 0u) << program.name;
      EXPECT_EQ(compiled.lowered_names.size(), program.kernels.size()) << program.name;
    } catch (const CompileError& e) {
      ADD_FAILURE() << program.name << ": " << e.log();
    }
  }
  fs::path dir_;
};

TEST_F(CalibrationPrograms, StreamKernelsAndClockProbeCompileForBothArchs) {
  JitCompiler jit(JitOptions{dir_.string()});
  for (const char* arch : {"sm_80", "sm_90a"}) {
    expect_compiles(jit, stream_program(arch, 256, 4));
    expect_compiles(jit, clock_probe_program(arch));
  }
}

TEST_F(CalibrationPrograms, WgmmaGemmCompilesForSm90aAtEveryShape) {
  JitCompiler jit(JitOptions{dir_.string()});
  expect_compiles(jit, gemm_wgmma_program("sm_90a", 256, 2, 4, 8));
  expect_compiles(jit, gemm_wgmma_program("sm_90a", 128, 2, 6, 16));
  expect_compiles(jit, gemm_wgmma_program("sm_90a", 256, 1, 5, 8));
}

TEST_F(CalibrationPrograms, MmaSyncGemmCompilesForSm80AndSm90a) {
  JitCompiler jit(JitOptions{dir_.string()});
  expect_compiles(jit, gemm_mma_sync_program("sm_80", 4));
  expect_compiles(jit, gemm_mma_sync_program("sm_90a", 3));
}

TEST_F(CalibrationPrograms, BadConfigsAreRejectedBeforeCompiling) {
  CalibrationOptions o;
  EXPECT_EQ(check_calibration_options(o, "sm_90a"), "");
  EXPECT_EQ(check_calibration_options(o, "sm_80"), "");  // auto picks mma_sync there
  o.gemm_kernel = "wgmma";
  EXPECT_NE(check_calibration_options(o, "sm_80").find("sm_90a"), std::string::npos);
  o.gemm_kernel = "auto";
  o.gemm_stages = 8;  // 8 x 48 KiB does not fit
  EXPECT_NE(check_calibration_options(o, "sm_90a").find("shared memory"), std::string::npos);
  o.gemm_stages = 4;
  o.gemm_size = 1000;
  EXPECT_NE(check_calibration_options(o, "sm_90a").find("multiple"), std::string::npos);
  o = {};
  o.stream_unroll = 0;
  EXPECT_NE(check_calibration_options(o, "sm_90a"), "");
}

// A ceiling records the clock it was measured at: the probe's median, else NVML's reading.
TEST(CalibrationClock, TheProbesMedianElseNvmlElseNotKnown) {
  Measurement m;
  EXPECT_FALSE(ceiling_clock_mhz(m).has_value());
  m.clocks.nvml_sm_clock_mhz = 1650;
  EXPECT_EQ(ceiling_clock_mhz(m), 1650.0);
  m.clocks.median_mhz = 1620;
  EXPECT_EQ(ceiling_clock_mhz(m), 1620.0);
  m.clocks.median_mhz = 0;
  m.clocks.nvml_sm_clock_mhz = 0;
  EXPECT_FALSE(ceiling_clock_mhz(m).has_value());
}

}  // namespace
}  // namespace attn
