#include "measure/cuda_graph_timer.hpp"

#include <algorithm>
#include <cmath>

namespace attn {

namespace {
constexpr int kMaxLaunchesPerGraph = 1000;
}

int GraphTimer::launches_for(double launch_us, double sample_us) {
  if (!(launch_us > 0)) return kMaxLaunchesPerGraph;
  return std::clamp(int(std::lround(sample_us / launch_us)), 2, kMaxLaunchesPerGraph);
}

GraphTimer::GraphTimer(const std::vector<Launcher*>& rotation, int launches,
                       const CudaContext& context, const Stream& stream)
    : launches_(launches),
      stream_(stream),
      graph_(CudaGraph::capture(context, stream,
                                [&] {
                                  ATTN_ASSERT(!rotation.empty(), "graph timer without launchers");
                                  for (int i = 0; i < launches; ++i) {
                                    rotation[size_t(i) % rotation.size()]->launch();
                                  }
                                })),
      start_(context),
      stop_(context) {}

double GraphTimer::sample_us() {
  start_.record(stream_);
  graph_.launch(stream_);
  stop_.record(stream_);
  stop_.synchronize();
  return double(stop_.elapsed_ms_since(start_)) * 1e3 / launches_;
}

}  // namespace attn
