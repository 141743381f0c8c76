// The one declaration of a variant's axes (kernels/config_axes.hpp) and the rule texts kept beside
// the traits (kernels/rule_message.hpp).
#include "kernels/config_axes.hpp"

#include <gtest/gtest.h>

#include "base/errors.hpp"
#include "kernels/paged_decode/sm80_mma_traits.hpp"
#include "kernels/rule_message.hpp"

namespace attn {
namespace {

ConfigAxes two_axes() {
  return ConfigAxes{{"tile_tokens", {16, 32, 64}, "keys per block", 32},
                    {"warps", {1, 2, 4}, "warps per CTA", 4}};
}

TEST(ConfigAxes, SpaceAndDefaultsComeFromTheOneDeclaration) {
  const ConfigAxes axes = two_axes();
  const std::vector<ConfigAxis> space = axes.space();
  ASSERT_EQ(space.size(), 2u);
  EXPECT_EQ(space[0].name, "tile_tokens");
  EXPECT_EQ(space[0].values, (std::vector<int64_t>{16, 32, 64}));
  EXPECT_EQ(space[1].help, "warps per CTA");
  EXPECT_EQ(axes.defaults(), (KernelConfig{{"tile_tokens", 32}, {"warps", 4}}));
  EXPECT_EQ(axes.defaults().label(), "t32.w4");
  EXPECT_EQ(axes.names(), (std::vector<std::string>{"tile_tokens", "warps"}));
}

TEST(ConfigAxes, AConfigMustNameExactlyTheAxes) {
  const ConfigAxes axes = two_axes();
  EXPECT_TRUE(axes.has_exactly(KernelConfig{{"tile_tokens", 16}, {"warps", 1}}, "v").ok);
  const Support missing = axes.has_exactly(KernelConfig{{"tile_tokens", 16}}, "v");
  EXPECT_FALSE(missing.ok);
  EXPECT_NE(missing.reason.find("warps"), std::string::npos) << missing.reason;
  EXPECT_FALSE(axes.has_exactly(KernelConfig{{"tile_tokens", 16}, {"warps", 1}, {"x", 1}}, "v").ok);
}

TEST(ConfigAxes, ADefaultOutsideItsValuesOrATwiceNamedAxisIsRefused) {
  EXPECT_THROW((ConfigAxes{{"warps", {1, 2}, "", 4}}), Error);
  EXPECT_THROW((ConfigAxes{{"warps", {1, 2}, "", 1}, {"warps", {1}, "", 1}}), Error);
}

TEST(RuleMessage, PlaceholdersAreFilledAndAHoleIsAnError) {
  EXPECT_EQ(fill_rule("needs {bytes} bytes (limit {limit})", {{"bytes", 10}, {"limit", 8}}),
            "needs 10 bytes (limit 8)");
  EXPECT_EQ(fill_rule("no placeholders", {}), "no placeholders");
  EXPECT_EQ(fill_rule("{what} is {what}", {{"what", std::string("x")}}), "x is x");
  EXPECT_THROW(fill_rule("needs {bytes}", {}), Error);
}

// Every rule of a traits header that keeps its texts beside the rules has a text, and the host's
// values fill every placeholder of it.
TEST(RuleMessage, EveryRuleOfPagedDecodeSm80MmaHasAFilledText) {
  namespace traits = paged_decode::sm80_mma;
  for (int rule = traits::kHeadDim; rule <= traits::kRegisters; ++rule) {
    const std::string text = traits::rule_text(rule);
    EXPECT_NE(text, "invalid config") << rule;
    const std::string filled = fill_rule(traits::rule_text(rule), {{"head_dim", 96},
                                                                   {"keys_per_slice", 64},
                                                                   {"shared_bytes", 1},
                                                                   {"shared_limit", 2},
                                                                   {"register_estimate", 3},
                                                                   {"register_limit", 4}});
    EXPECT_EQ(filled.find('{'), std::string::npos) << filled;
  }
}

}  // namespace
}  // namespace attn
