// A CUtensorMap's 128 opaque bytes (cuda.h's type, without including cuda.h in device code): the
// TMA descriptor a kernel parameter carries. Host code fills it with encode_tensor_map_2d
// (kernels/device/tensor_map.hpp); device code passes its address to cp.async.bulk.tensor, which
// needs the parameter struct to be __grid_constant__.
#pragma once

namespace attn {

struct alignas(64) TensorMapBytes {
  unsigned long long opaque[16];
};

}  // namespace attn
