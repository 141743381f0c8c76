#include "workloads/workload_spec.hpp"

namespace attn {

std::string to_string(KvLayout layout) {
  return layout == KvLayout::nhd ? "NHD" : "HND";
}

std::optional<KvLayout> kv_layout_from_string(const std::string& text) {
  if (text == "NHD") return KvLayout::nhd;
  if (text == "HND") return KvLayout::hnd;
  return std::nullopt;
}

std::string to_string(PageAllocation allocation) {
  return allocation == PageAllocation::sequential ? "sequential" : "shuffled";
}

std::optional<PageAllocation> page_allocation_from_string(const std::string& text) {
  if (text == "sequential") return PageAllocation::sequential;
  if (text == "shuffled") return PageAllocation::shuffled;
  return std::nullopt;
}

}  // namespace attn
