// The `gpu-quick` cases (tests/kernels/variant_smoke_cases.hpp) on the CPU: one per CUDA variant
// of the registry, none for anything else, and each accepted with the variant's default config on
// an H100/H200-like target (and on an A100-like one, for the variants that do not need Hopper).
#include "tests/kernels/variant_smoke_cases.hpp"

#include <gtest/gtest.h>

#include <set>

#include "kernels/registry.hpp"
#include "tests/target_fixtures.hpp"

namespace attn::testing {
namespace {

TEST(VariantSmokeCases, NameEveryCudaVariantOfTheRegistryOnce) {
  const Registry registry = make_registry();
  std::vector<std::string> cuda;
  for (const auto& variant : registry.variants()) {
    if (variant->backend() == Backend::cuda) cuda.push_back(variant->name());
  }
  EXPECT_EQ(smoke_variant_names(), cuda) << "add the new variant to variant_smoke_cases.hpp";
  const std::vector<std::string> names = smoke_variant_names();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
}

TEST(VariantSmokeCases, EachVariantAcceptsItsBatchWithItsDefaultConfig) {
  const Registry registry = make_registry();
  for (const std::string& name : smoke_variant_names()) {
    const Variant* variant = registry.find(name);
    ASSERT_NE(variant, nullptr) << name;
    const Batch batch = smoke_batch(name);
    const bool hopper_only = name.find("sm90") != std::string::npos;
    for (const Target& target : {hopper_target(), ampere_target()}) {
      const KernelConfig config = variant->default_config(batch, target);
      const Support support = variant->check(batch, config, target);
      if (target.cc_major >= 9 || !hopper_only) {
        EXPECT_TRUE(support.ok) << name << " on " << target.arch << ": " << support.reason;
        EXPECT_EQ(variant->programs(batch, config, target).size(), 1u) << name;
      } else {
        EXPECT_FALSE(support.ok) << name << " on " << target.arch;
      }
    }
    EXPECT_GE(batch.total_q, 4) << name;
    EXPECT_LT(batch.total_q * batch.spec.model.num_q_heads * batch.max_kv_len() *
                  batch.spec.model.head_dim,
              int64_t(1) << 31)
        << name << ": a small case";
  }
}

}  // namespace
}  // namespace attn::testing
