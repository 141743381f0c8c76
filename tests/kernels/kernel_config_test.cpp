#include "base/kernel_config.hpp"

#include <gtest/gtest.h>

#include "base/errors.hpp"

namespace attn {
namespace {

TEST(KernelConfig, KeyAndLabelAreCanonical) {
  KernelConfig a{{"warps", 4}, {"tile_tokens", 64}};
  KernelConfig b;
  b.set("tile_tokens", 64).set("warps", 4);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.key(), "tile_tokens=64,warps=4");
  EXPECT_EQ(a.label(), "t64.w4");
  EXPECT_EQ(a.to_json().dump(), R"({"tile_tokens":64,"warps":4})");
}

TEST(KernelConfig, FromKeyRoundTripsAndRejectsJunk) {
  KernelConfig c = KernelConfig::from_key("num_splits=0,heads_per_cta=8");
  EXPECT_EQ(c.get("heads_per_cta"), 8);
  EXPECT_EQ(KernelConfig::from_key(c.key()), c);
  EXPECT_THROW(KernelConfig::from_key("warps"), UsageError);
  EXPECT_THROW(KernelConfig::from_key("warps=four"), UsageError);
  EXPECT_THROW(KernelConfig::from_key("warps=4x"), UsageError);
  EXPECT_THROW(KernelConfig::from_key("=4"), UsageError);
}

TEST(KernelConfig, MissingAxisIsAnInternalError) {
  KernelConfig c{{"warps", 4}};
  EXPECT_FALSE(c.find("tile_tokens").has_value());
  EXPECT_THROW(c.get("tile_tokens"), Error);
}

}  // namespace
}  // namespace attn
