#include "measure/l2_flush.hpp"

#include <algorithm>

namespace attn {

L2Flusher::L2Flusher(const CudaContext& context, size_t l2_bytes)
    : api_(&context.api()), buffer_(context, std::max<size_t>(2 * l2_bytes, size_t(1) << 20)) {}

void L2Flusher::flush(const Stream& stream) {
  // A new value each time: a memset of the same bytes could in principle be elided.
  ATTN_CU_CHECK(
      *api_, cuMemsetD32Async(buffer_.address(), ++value_, buffer_.bytes() / 4, stream.handle()));
}

}  // namespace attn
