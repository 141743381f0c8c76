// The launcher of every CUDA variant with one kernel and one by-value parameter struct: launch()
// enqueues the kernel on the context's stream (nothing for an empty grid), and the launcher owns
// the device buffers the parameters point into (gathered K/V, schedules, sinks, scales ...).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kernels/device/cuda_context.hpp"
#include "kernels/exec_context.hpp"
#include "kernels/variant.hpp"

namespace attn {

template <typename Params>
class ParamsLauncher : public Launcher {
 public:
  ParamsLauncher(const ExecContext& context, CUfunction kernel, LaunchShape shape,
                 const Params& params, std::vector<DeviceBuffer> owned)
      : context_(context),
        kernel_(kernel),
        shape_(shape),
        params_(params),
        owned_(std::move(owned)) {}
  void launch() override {
    if (shape_.grid_x > 0) attn::launch(*context_.cuda, kernel_, shape_, *context_.stream, params_);
  }
  std::string plan() const override { return plan_; }
  void set_plan(std::string plan) { plan_ = std::move(plan); }

 private:
  ExecContext context_;
  CUfunction kernel_;
  LaunchShape shape_;
  Params params_;
  std::vector<DeviceBuffer> owned_;  // params_ points into them
  std::string plan_;
};

}  // namespace attn
