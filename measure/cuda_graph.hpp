// CudaGraph: the work a callable enqueues on a stream, captured once into an executable CUDA graph
// and replayed with one launch. Replaying N kernel launches as one graph removes the CPU launch
// gaps between them, which is what the graph timer (cuda_graph_timer.hpp) measures short kernels
// with. Move-only; the graph and its executable are destroyed by the destructor.
#pragma once

#include <functional>

#include "kernels/device/cuda_context.hpp"

namespace attn {

class CudaGraph {
 public:
  // Captures what `enqueue` puts on `stream` (thread-local capture mode: other threads' CUDA calls
  // are not disturbed). Nothing runs during capture.
  static CudaGraph capture(const CudaContext& context, const Stream& stream,
                           const std::function<void()>& enqueue);
  CudaGraph(CudaGraph&& other) noexcept;
  CudaGraph& operator=(CudaGraph&& other) noexcept;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  ~CudaGraph();

  void launch(const Stream& stream) const;

 private:
  CudaGraph() = default;
  void release() noexcept;
  const DriverApi* api_ = nullptr;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

}  // namespace attn
