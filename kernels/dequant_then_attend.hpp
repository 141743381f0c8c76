// The launcher of a Hopper attention kernel over an fp8 cache whose codes a pass converts to 16-bit
// first (kernels/common/fp8_dequantize.cuh): launch() enqueues the pass, then the attention
// kernel's own launcher, on the context's stream; both are timed together.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "kernels/common/fp8_dequantize_params.hpp"
#include "kernels/dtype_code_of.hpp"
#include "kernels/exec_context.hpp"
#include "kernels/variant.hpp"

namespace attn {

// The pass's name expression in a program that includes fp8_dequantize.cuh, for queries (and so
// 16-bit copies) of `dtype`.
inline std::string dequantize_fp8_kernel(DType dtype) {
  return "attn::dequantize_fp8<" + std::to_string(dtype_code_of(dtype)) + ">";
}

// Adds the pass to `program` (its source and its kernel, for queries of `dtype`), beside the
// attention kernel that reads the 16-bit copies.
inline void add_dequantize_fp8(JitProgram& program, DType dtype) {
  program.source += "#include \"kernels/common/fp8_dequantize.cuh\"\n";
  program.kernels.push_back(dequantize_fp8_kernel(dtype));
}

class DequantThenAttend : public Launcher {
 public:
  // `attend` owns the buffers `params` points into.
  DequantThenAttend(const ExecContext& context, CUfunction dequantize,
                    const Fp8DequantParams& params, std::unique_ptr<Launcher> attend)
      : context_(context), dequantize_(dequantize), params_(params), attend_(std::move(attend)) {
    shape_.grid_x = unsigned(fp8_dequantize::ctas(params.k_bytes, params.v_bytes));
    shape_.block_x = unsigned(fp8_dequantize::kThreads);
  }
  void launch() override {
    if (shape_.grid_x > 0)
      attn::launch(*context_.cuda, dequantize_, shape_, *context_.stream, params_);
    attend_->launch();
  }
  std::string plan() const override { return attend_->plan(); }

 private:
  ExecContext context_;
  CUfunction dequantize_;
  LaunchShape shape_;
  Fp8DequantParams params_;
  std::unique_ptr<Launcher> attend_;
};

}  // namespace attn
