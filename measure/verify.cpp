#include "measure/verify.hpp"

#include <cmath>
#include <cstdio>

namespace attn {

double tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::bf16:
      return 5e-3;
    case DType::fp16:
      return 1.5e-3;
    case DType::fp32:
      return 1e-5;
    case DType::fp8_e4m3:
      return 6e-2;  // outputs are never fp8; a loose bound for completeness
  }
  return 0;
}

Verification verify_output(const void* output, DType dtype, const std::vector<float>& reference,
                           int row_length, const std::string& reference_name) {
  Verification v;
  v.checked = true;
  v.reference = reference_name;
  v.tolerance = tolerance_for(dtype);
  v.elements = int64_t(reference.size());
  const size_t rows = reference.size() / size_t(row_length);
  for (size_t r = 0; r < rows; ++r) {
    double error_squares = 0, reference_squares = 0;
    for (size_t i = r * size_t(row_length); i < (r + 1) * size_t(row_length); ++i) {
      const double out = load_as_float(output, i, dtype);
      const double ref = reference[i];
      if (!std::isfinite(out)) {
        ++v.nonfinite;
        continue;
      }
      const double diff = out - ref;
      v.max_abs_error = std::max(v.max_abs_error, std::fabs(diff));
      error_squares += diff * diff;
      reference_squares += ref * ref;
    }
    double row_error = 0;
    if (reference_squares > 0) {
      row_error = std::sqrt(error_squares / reference_squares);
    } else if (error_squares > 0) {
      row_error = INFINITY;  // the reference row is exactly zero and the output is not
    }
    v.rel_l2_error = std::max(v.rel_l2_error, row_error);
  }
  return v;
}

bool verification_passed(const Verification& v) {
  return v.checked && v.nonfinite == 0 && v.rel_l2_error <= v.tolerance;
}

std::string describe(const Verification& v) {
  char text[256];
  if (v.nonfinite > 0) {
    std::snprintf(text, sizeof(text),
                  "%lld of %lld output elements are NaN/inf (unwritten or overflowed)",
                  (long long)v.nonfinite, (long long)v.elements);
  } else {
    std::snprintf(text, sizeof(text),
                  "worst row rel_l2 %.2e %s tolerance %.1e (max abs %.2e, vs %s)", v.rel_l2_error,
                  v.rel_l2_error <= v.tolerance ? "<=" : ">", v.tolerance, v.max_abs_error,
                  v.reference.c_str());
  }
  return text;
}

}  // namespace attn
