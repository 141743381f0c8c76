#include "kernels/registry.hpp"

#include "base/errors.hpp"
#include "base/variant_aliases.hpp"
#include "kernels/blocksparse/blocksparse_variants.hpp"
#include "kernels/flash_fwd/flash_fwd_variants.hpp"
#include "kernels/mla_decode/mla_decode_variants.hpp"
#include "kernels/paged_decode/paged_decode_variants.hpp"
#include "kernels/prefix_prefill/prefix_prefill_variants.hpp"
#include "kernels/test_faults/fault_variants.hpp"

namespace attn {

void Registry::add(std::unique_ptr<Variant> variant) {
  ATTN_ASSERT(find(variant->name()) == nullptr, "variant registered twice: " + variant->name());
  variants_.push_back(std::move(variant));
}

const Variant* Registry::find(const std::string& name) const {
  const std::string current = current_variant_name(name);  // an older name finds today's variant
  for (const auto& v : variants_) {
    if (v->name() == current) return v.get();
  }
  return nullptr;
}

std::vector<const Variant*> Registry::matching(const std::string& pattern) const {
  std::vector<const Variant*> out;
  for (const auto& v : variants_) {
    if (pattern.empty() || variant_glob_match(pattern, v->name())) out.push_back(v.get());
  }
  return out;
}

Registry make_registry() {
  Registry registry;
  add_paged_decode_variants(registry);
  add_prefix_prefill_variants(registry);
  add_flash_fwd_variants(registry);
  add_blocksparse_variants(registry);
  add_mla_decode_variants(registry);
  if (test_variants_enabled()) {  // test only, never by default
    add_test_fault_variants(registry);
    add_test_cpu_variants(registry);
  }
  return registry;
}

}  // namespace attn
