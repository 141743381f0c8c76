// The graph timer's copies of a problem: enough that a graph's launches read twice the L2, by what
// one launch reads, within half the free device memory and kMaxRotationCopies.
#include "measure/rotation_copies.hpp"

#include <gtest/gtest.h>

namespace attn {
namespace {

constexpr double kMiB = 1024.0 * 1024.0, kGiB = 1024.0 * kMiB;

TEST(RotationCopies, EnoughForTwiceTheL2ByWhatOneLaunchReads) {
  // A 128-key window over 64 x 8192 keys reads 33.5 MB of a 2.1 GB cache: 4 copies cover twice a
  // 60 MiB L2, where the whole cache would have asked for one.
  EXPECT_EQ(rotation_copies(33.5e6, 60 * kMiB, 2.2e9, 100 * kGiB), 4u);
  EXPECT_EQ(rotation_copies(2.1e9, 60 * kMiB, 2.2e9, 100 * kGiB), 1u);
  EXPECT_EQ(rotation_copies(60 * kMiB, 60 * kMiB, 1 * kGiB, 100 * kGiB), 2u);
}

TEST(RotationCopies, BoundedByTheCapAndByHalfTheFreeMemory) {
  EXPECT_EQ(rotation_copies(1e3, 60 * kMiB, 1e6, 100 * kGiB), kMaxRotationCopies);
  EXPECT_EQ(rotation_copies(0, 60 * kMiB, 1e6, 100 * kGiB), kMaxRotationCopies);
  // 2 MB windows over a 2 GiB cache would want 63 copies; 20 GiB free holds 5 more at half.
  EXPECT_EQ(rotation_copies(2e6, 60 * kMiB, 2 * kGiB, 20 * kGiB), 6u);
  // No room for a copy: the problem alone.
  EXPECT_EQ(rotation_copies(2e6, 60 * kMiB, 2 * kGiB, 1 * kGiB), 1u);
  EXPECT_EQ(rotation_copies(2e6, 60 * kMiB, 2 * kGiB, 0), 1u);
}

}  // namespace
}  // namespace attn
