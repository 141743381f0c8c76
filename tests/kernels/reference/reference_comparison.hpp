// Row-by-row comparison of two oracles' outputs, for the GPU tests that hold the GPU references
// to the CPU reference and to each other (gpu_reference_gpu_test.cpp,
// gpu_tiled_reference_gpu_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "workloads/batch.hpp"

namespace attn::testing {

// One oracle's output ([total_q, num_q_heads, v_head_dim]) and LSE ([total_q, num_q_heads]).
struct OracleRows {
  std::string name;
  std::vector<float> out, lse;
};

// Rows (one query token and head) where `got` and `expected` differ: a relative L2 error above
// `tolerance`, an LSE further apart than `tolerance` relative (at least 1 absolute), or a row
// `expected` leaves at exactly zero with an LSE of -inf (it sees no key) that `got` does not.
// Reports the first `report` of them as test failures and returns how many there are.
inline int64_t rows_apart(const Batch& batch, const OracleRows& got, const OracleRows& expected,
                          double tolerance, const std::string& what, int report = 3) {
  const size_t D = size_t(batch.spec.model.effective_v_head_dim());
  const int heads = batch.spec.model.num_q_heads;
  EXPECT_EQ(got.out.size(), expected.out.size()) << what;
  EXPECT_EQ(got.lse.size(), expected.lse.size()) << what;
  EXPECT_EQ(expected.out.size(), size_t(batch.total_q) * size_t(heads) * D) << what;
  if (got.out.size() != expected.out.size() || got.lse.size() != expected.lse.size()) return -1;
  int64_t apart = 0;
  for (size_t r = 0; r * D < expected.out.size(); ++r) {
    double diff = 0, norm = 0;
    for (size_t d = 0; d < D; ++d) {
      const double e = expected.out[r * D + d], g = got.out[r * D + d];
      diff += (g - e) * (g - e);
      norm += e * e;
    }
    const double e = expected.lse[r], g = got.lse[r];
    const bool lse_ok = std::isinf(e) ? (std::isinf(g) && g < 0)
                                      : std::fabs(g - e) <= tolerance * std::max(1.0, std::fabs(e));
    const bool row_ok = norm == 0 ? diff == 0 : std::sqrt(diff / norm) <= tolerance;
    if (!(row_ok && lse_ok)) {
      if (apart++ < report) {
        ADD_FAILURE() << what << ": " << got.name << " vs " << expected.name << ", row " << r
                      << " (token " << r / size_t(heads) << ", head " << r % size_t(heads)
                      << ") rel L2 " << (norm == 0 ? diff : std::sqrt(diff / norm)) << ", LSE " << g
                      << " vs " << e;
      }
    }
  }
  return apart;
}

}  // namespace attn::testing
