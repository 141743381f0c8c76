#include "base/variant_aliases.hpp"

#include "base/glob.hpp"

namespace attn {

const std::vector<VariantAlias>& variant_aliases() {
  // The Ampere tensor-core paths were called tensorcore, mma or decode depending on the family;
  // the SIMT decode kernel was named after its split-KV schedule, which the others have too.
  static const std::vector<VariantAlias> kAliases = {
      {"paged_decode.tensorcore", "paged_decode.sm80_mma"},
      {"paged_decode.splitkv", "paged_decode.sm80_simt"},
      {"prefix_prefill.mma", "prefix_prefill.sm80_mma"},
      {"prefix_prefill.masked", "prefix_prefill.sm80_mma_masked"},
      {"blocksparse.mma", "blocksparse.sm80_mma"},
      {"blocksparse.decode", "blocksparse.sm80_mma_decode"},
  };
  return kAliases;
}

std::string current_variant_name(const std::string& variant) {
  for (const VariantAlias& alias : variant_aliases()) {
    if (variant == alias.old_name) return alias.current_name;
  }
  return variant;
}

std::vector<std::string> variant_name_forms(const std::string& variant) {
  const std::string current = current_variant_name(variant);
  std::vector<std::string> forms{current};
  for (const VariantAlias& alias : variant_aliases()) {
    if (current == alias.current_name) forms.push_back(alias.old_name);
  }
  return forms;
}

bool variant_glob_match(const std::string& glob, const std::string& variant) {
  for (const std::string& name : variant_name_forms(variant)) {
    if (glob_match(glob, name)) return true;
  }
  return false;
}

}  // namespace attn
