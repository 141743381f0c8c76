// A generated batch's K/V declared fp8 e4m3, for the tests that only ask which variants accept it
// (gating, configs, names): its data is left as generated.
#pragma once

#include <cstddef>

#include "workloads/batch.hpp"

namespace attn::testing {

// `batch` over an fp8 cache with one K and one V scale (per_head: one per kv head).
inline Batch with_fp8(Batch batch, bool per_head) {
  batch.kv_dtype = DType::fp8_e4m3;
  if (per_head) batch.spec.model.kv_scale = KvScaleGranularity::per_head;
  const size_t scales = per_head ? size_t(batch.spec.model.num_kv_heads) : 1;
  batch.k_scales.assign(scales, 0.01f);
  batch.v_scales.assign(scales, 0.02f);
  return batch;
}

}  // namespace attn::testing
