#include "kernels/device/sticky_errors.hpp"

#include <gtest/gtest.h>

#include "base/errors.hpp"

namespace attn {
namespace {

TEST(StickyErrors, TheContextLosingDriverErrorsAndNoOthers) {
  for (long long status : {700, 702, 709, 710, 714, 715, 716, 717, 718, 719, 999}) {
    EXPECT_TRUE(is_sticky_cuda_error(status)) << status;
  }
  // Out of memory, invalid value, too many resources requested, no device: the context survives.
  for (long long status : {0, 1, 2, 100, 701, 720}) {
    EXPECT_FALSE(is_sticky_cuda_error(status)) << status;
  }
  const CallError illegal("CUDA driver", 700, "CUDA_ERROR_ILLEGAL_ADDRESS", "", "f()", "x", 1);
  EXPECT_TRUE(is_sticky_cuda_error(illegal));
  const CallError sqlite("SQLite", 700, "", "", "f()", "x", 1);
  EXPECT_FALSE(is_sticky_cuda_error(sqlite));
  EXPECT_FALSE(is_sticky_cuda_error(std::runtime_error("700")));
}

}  // namespace
}  // namespace attn
