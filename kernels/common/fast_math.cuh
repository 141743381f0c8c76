// Special-function-unit math the attention kernels share.
#pragma once

namespace attn {

// 2^x on the special-function unit, subnormal results flushed to zero (a probability below 2^-126
// of the row's largest is zero either way); exp2f without fast-math adds denormal scaling.
// exp2_ftz(-inf) = +0.
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace attn
