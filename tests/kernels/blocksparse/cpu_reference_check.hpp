// The CPU tests' check of blocksparse.cpu_reference against the independent dense oracle
// (naive_dense_attention, which applies key_visible to values computed from the data rule).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/exec_context.hpp"
#include "kernels/reference/paged_attention_reference.hpp"
#include "kernels/registry.hpp"
#include "base/dtype.hpp"
#include "tests/test_support.hpp"

namespace attn::testing {

// Runs blocksparse.cpu_reference on `batch` (two threads) and expects each output element within
// 1e-2 + 1e-2 |oracle| of the oracle's, which holds `elements`; returns the oracle's output (empty
// where the reference declined the batch or the sizes differ).
inline std::vector<float> expect_cpu_reference_matches_oracle(const Batch& batch,
                                                              size_t elements) {
  const Registry registry = make_registry();
  const Variant& cpu = *registry.find("blocksparse.cpu_reference");
  const Support support = cpu.check(batch, {}, Target::cpu());
  EXPECT_TRUE(support.ok) << support.reason;
  if (!support.ok) return {};
  Problem host = Problem::on_host(batch);
  ExecContext context;
  context.target = Target::cpu();
  context.cpu_threads = 2;
  cpu.run(host, {}, context);
  const std::vector<float> expected = naive_dense_attention(batch, 2);
  EXPECT_EQ(expected.size(), elements);
  if (expected.size() != elements) return {};
  const uint8_t* out = static_cast<const uint8_t*>(host.out());
  for (size_t i = 0; i < expected.size(); ++i) {
    const float got = load_as_float(out, i, batch.dtype);
    EXPECT_NEAR(got, expected[i], 1e-2 + 1e-2 * std::fabs(expected[i])) << i;
  }
  return expected;
}

}  // namespace attn::testing
