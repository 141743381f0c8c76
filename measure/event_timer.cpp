#include "measure/event_timer.hpp"

namespace attn {

EventTimer::EventTimer(Launcher& launcher, const CudaContext& context, const Stream& stream,
                       L2Flusher* flusher)
    : launcher_(launcher), stream_(stream), flusher_(flusher), start_(context), stop_(context) {}

double EventTimer::sample_us() {
  if (flusher_) flusher_->flush(stream_);
  start_.record(stream_);
  launcher_.launch();
  stop_.record(stream_);
  stop_.synchronize();
  return double(stop_.elapsed_ms_since(start_)) * 1e3;
}

}  // namespace attn
