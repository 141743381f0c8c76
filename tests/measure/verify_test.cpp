#include "measure/verify.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace attn {
namespace {

std::vector<uint16_t> store(const std::vector<float>& values, DType dtype) {
  std::vector<uint16_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) store_from_float(out.data(), i, dtype, values[i]);
  return out;
}

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

TEST(Verify, RoundedReferencePassesInEveryDtype) {
  const auto ref = random_values(64 * 128, 1);
  for (DType dtype : {DType::bf16, DType::fp16}) {
    const auto out = store(ref, dtype);
    const Verification v = verify_output(out.data(), dtype, ref, 128, "test");
    EXPECT_TRUE(verification_passed(v)) << describe(v);
    EXPECT_GT(v.rel_l2_error, 0);  // rounding is visible, but within tolerance
    EXPECT_EQ(v.elements, int64_t(ref.size()));
  }
}

TEST(Verify, PoisonedElementFails) {
  const auto ref = random_values(8 * 64, 2);
  auto out = store(ref, DType::bf16);
  out[77] = 0xFFFF;  // the poison pattern: never written
  const Verification v = verify_output(out.data(), DType::bf16, ref, 64, "test");
  EXPECT_FALSE(verification_passed(v));
  EXPECT_EQ(v.nonfinite, 1);
  EXPECT_NE(describe(v).find("NaN"), std::string::npos);
}

TEST(Verify, OneWrongRowAmongManyFails) {
  // 4096 rows; one row's values are slightly off (2%): a whole-tensor norm would miss it.
  const int rows = 4096, length = 64;
  const auto ref = random_values(size_t(rows) * length, 3);
  std::vector<float> perturbed = ref;
  for (int i = 0; i < length; ++i) perturbed[size_t(1234 * length + i)] *= 1.02f;
  const auto out = store(perturbed, DType::bf16);
  const Verification v = verify_output(out.data(), DType::bf16, ref, length, "test");
  EXPECT_FALSE(verification_passed(v)) << describe(v);
  EXPECT_GT(v.rel_l2_error, 0.015);
}

TEST(Verify, NonZeroOutputForZeroReferenceRowFails) {
  std::vector<float> ref(16, 0.0f);
  std::vector<float> out_values(16, 0.0f);
  out_values[3] = 0.5f;
  const auto out = store(out_values, DType::fp16);
  EXPECT_FALSE(verification_passed(verify_output(out.data(), DType::fp16, ref, 16, "test")));
  const auto zeros = store(ref, DType::fp16);
  EXPECT_TRUE(verification_passed(verify_output(zeros.data(), DType::fp16, ref, 16, "test")));
}

TEST(Verify, TolerancesOrderByPrecision) {
  EXPECT_GT(tolerance_for(DType::bf16), tolerance_for(DType::fp16));
  EXPECT_GT(tolerance_for(DType::fp16), tolerance_for(DType::fp32));
}

}  // namespace
}  // namespace attn
