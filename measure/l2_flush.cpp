#include "measure/l2_flush.hpp"

#include <algorithm>

#include "kernels/calibrate/calibrate_params.hpp"
#include "measure/stream_program.hpp"

namespace attn {

namespace {
constexpr int kThreads = 256, kUnroll = 4, kBlocksPerSm = 4;
}  // namespace

size_t L2Flusher::buffer_bytes(size_t l2_bytes) {
  return std::max<size_t>(2 * l2_bytes, size_t(1) << 20);
}

L2Flusher::L2Flusher(const CudaContext& context, KernelLoader& loader, size_t l2_bytes)
    : context_(&context),
      written_(context, buffer_bytes(l2_bytes)),
      read_(context, buffer_bytes(l2_bytes)),
      sink_(context, 16) {
  const JitProgram program = stream_program(context.info().arch(), kThreads, kUnroll);
  read_kernel_ = loader.function(program, stream_kernel("stream_read", kThreads, kUnroll));
  grid_ = unsigned(std::max(1, context.info().sm_count) * kBlocksPerSm);
}

void L2Flusher::flush(const Stream& stream) {
  // A new value each time: a memset of the same bytes could in principle be elided.
  ATTN_CU_CHECK(context_->api(), cuMemsetD32Async(written_.address(), ++value_,
                                                  written_.bytes() / 4, stream.handle()));
  StreamParams p{};
  p.src = read_.pointer();
  p.vectors = read_.bytes() / 16;
  p.sink = static_cast<unsigned int*>(sink_.pointer());
  p.sentinel = 0x9e3779b9u;  // the read buffer's contents do not matter: the sum is discarded
  LaunchShape shape;
  shape.grid_x = grid_;
  shape.block_x = kThreads;
  launch(*context_, read_kernel_, shape, stream, p);
}

}  // namespace attn
