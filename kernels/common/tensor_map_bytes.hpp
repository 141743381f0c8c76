// A CUtensorMap's 128 opaque bytes (cuda.h's type, without including cuda.h in device code): a
// TMA descriptor, passed to kernels inside a __grid_constant__ parameter struct.
#pragma once

namespace attn {

struct alignas(64) TensorMapBytes {
  unsigned long long opaque[16];
};

}  // namespace attn
