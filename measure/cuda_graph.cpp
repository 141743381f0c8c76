#include "measure/cuda_graph.hpp"

#include <utility>

namespace attn {

CudaGraph CudaGraph::capture(const CudaContext& context, const Stream& stream,
                             const std::function<void()>& enqueue) {
  CudaGraph graph;
  graph.api_ = &context.api();
  const DriverApi& api = context.api();
  ATTN_CU_CHECK(api, cuStreamBeginCapture(stream.handle(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  try {
    enqueue();
  } catch (...) {
    CUgraph broken = nullptr;
    api.cuStreamEndCapture(stream.handle(), &broken);  // leaves the stream usable
    if (broken) api.cuGraphDestroy(broken);
    throw;
  }
  ATTN_CU_CHECK(api, cuStreamEndCapture(stream.handle(), &graph.graph_));
  ATTN_CU_CHECK(api, cuGraphInstantiateWithFlags(&graph.exec_, graph.graph_, 0));
  return graph;
}

CudaGraph::CudaGraph(CudaGraph&& other) noexcept
    : api_(other.api_),
      graph_(std::exchange(other.graph_, nullptr)),
      exec_(std::exchange(other.exec_, nullptr)) {}

CudaGraph& CudaGraph::operator=(CudaGraph&& other) noexcept {
  if (this != &other) {
    release();
    api_ = other.api_;
    graph_ = std::exchange(other.graph_, nullptr);
    exec_ = std::exchange(other.exec_, nullptr);
  }
  return *this;
}

CudaGraph::~CudaGraph() {
  release();
}

void CudaGraph::release() noexcept {
  if (exec_) api_->cuGraphExecDestroy(exec_);
  if (graph_) api_->cuGraphDestroy(graph_);
  exec_ = nullptr;
  graph_ = nullptr;
}

void CudaGraph::launch(const Stream& stream) const {
  ATTN_CU_CHECK(*api_, cuGraphLaunch(exec_, stream.handle()));
}

}  // namespace attn
