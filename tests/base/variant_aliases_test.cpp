// The alias table of renamed variants: old names find today's variants, today's names find rows
// stored under the old ones, and the table itself is consistent with the registry.
#include "base/variant_aliases.hpp"

#include <gtest/gtest.h>

#include <set>

namespace attn {
namespace {

TEST(VariantAliases, OldNamesMapToTodaysAndOthersStay) {
  EXPECT_EQ(current_variant_name("paged_decode.tensorcore"), "paged_decode.sm80_mma");
  EXPECT_EQ(current_variant_name("prefix_prefill.masked"), "prefix_prefill.sm80_mma_masked");
  EXPECT_EQ(current_variant_name("blocksparse.decode"), "blocksparse.sm80_mma_decode");
  EXPECT_EQ(current_variant_name("paged_decode.sm80_mma"), "paged_decode.sm80_mma");
  EXPECT_EQ(current_variant_name("flash_fwd.sm80_mma"), "flash_fwd.sm80_mma");
  EXPECT_EQ(current_variant_name("peer.torch.sdpa_flash"), "peer.torch.sdpa_flash");
}

TEST(VariantAliases, TableIsAFunctionAndNoCurrentNameIsOld) {
  std::set<std::string> old_names, current_names;
  for (const VariantAlias& alias : variant_aliases()) {
    EXPECT_TRUE(old_names.insert(alias.old_name).second) << alias.old_name << " listed twice";
    current_names.insert(alias.current_name);
    EXPECT_NE(std::string(alias.old_name), alias.current_name);
  }
  for (const std::string& current : current_names) {
    EXPECT_EQ(old_names.count(current), 0u) << current << " is both a current and an old name";
  }
}

TEST(VariantAliases, FormsListTodaysNameFirstThenTheOldOnes) {
  EXPECT_EQ(variant_name_forms("paged_decode.splitkv"),
            (std::vector<std::string>{"paged_decode.sm80_simt", "paged_decode.splitkv"}));
  EXPECT_EQ(variant_name_forms("paged_decode.sm80_simt"),
            (std::vector<std::string>{"paged_decode.sm80_simt", "paged_decode.splitkv"}));
  EXPECT_EQ(variant_name_forms("flash_fwd.sm90_wgmma"),
            (std::vector<std::string>{"flash_fwd.sm90_wgmma"}));
}

TEST(VariantAliases, GlobsMatchUnderAnyName) {
  // An old filter finds today's variant; today's filter finds a row stored under the old name.
  EXPECT_TRUE(variant_glob_match("paged_decode.tensorcore", "paged_decode.sm80_mma"));
  EXPECT_TRUE(variant_glob_match("paged_decode.sm80_mma", "paged_decode.tensorcore"));
  EXPECT_TRUE(variant_glob_match("blocksparse.mma*", "blocksparse.sm80_mma"));
  EXPECT_TRUE(variant_glob_match("*sm80_mma_masked", "prefix_prefill.masked"));
  EXPECT_FALSE(variant_glob_match("paged_decode.sm80_mma", "paged_decode.splitkv"));
  EXPECT_FALSE(variant_glob_match("blocksparse.sm80_mma", "blocksparse.decode"));
  EXPECT_FALSE(variant_glob_match("prefix_prefill.mma", "prefix_prefill.masked"));
}

}  // namespace
}  // namespace attn
