// Verification of an output against a reference: every element finite, and the relative L2 error
// of every output row (one query token and head) within the dtype's tolerance. A row-wise check
// catches one wrong head or token that a whole-tensor norm would average away.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/dtype.hpp"
#include "results/measurement.hpp"

namespace attn {

// Relative L2 limit per row for an output stored as `dtype`, computed from exactly rounded inputs:
// output rounding alone gives about 2^-9/sqrt(3) (bf16) and 2^-11/sqrt(3) (fp16).
double tolerance_for(DType dtype);

// `output` holds elements of `dtype`; `reference` the same number of floats in rows of row_length.
Verification verify_output(const void* output, DType dtype, const std::vector<float>& reference,
                           int row_length, const std::string& reference_name);

bool verification_passed(const Verification& verification);

// "rel_l2 1.2e-03 > 5.0e-03" style summary for messages.
std::string describe(const Verification& verification);

}  // namespace attn
