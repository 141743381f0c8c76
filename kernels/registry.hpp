// Registry: every variant attn-bench knows, filled by one explicit function (no static
// initialisers), in the order `attn-bench list` prints them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/glob.hpp"
#include "kernels/variant.hpp"

namespace attn {

class Registry {
 public:
  void add(std::unique_ptr<Variant> variant);
  const std::vector<std::unique_ptr<Variant>>& variants() const { return variants_; }
  const Variant* find(const std::string& name) const;
  // Variants whose name matches the glob ('*' and '?'); an empty pattern matches all.
  std::vector<const Variant*> matching(const std::string& pattern) const;

 private:
  std::vector<std::unique_ptr<Variant>> variants_;
};

// Every built-in variant; with $ATTN_BENCH_TEST_VARIANTS=1 also the test-only faulting variants
// (kernels/test_faults/fault_variants.hpp).
Registry make_registry();

}  // namespace attn
