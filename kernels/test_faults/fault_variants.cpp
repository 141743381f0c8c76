#include "kernels/test_faults/fault_variants.hpp"

#include <cstdlib>
#include <memory>

#include "kernels/launch_inputs.hpp"
#include "kernels/paged_decode/paged_decode_variants.hpp"
#include "kernels/registry.hpp"
#include "kernels/test_faults/fault_params.hpp"

namespace attn {

namespace {

using test_faults::FaultParams;

class FaultLauncher : public Launcher {
 public:
  FaultLauncher(const ExecContext& context, CUfunction kernel, LaunchShape shape, FaultParams p)
      : context_(context), kernel_(kernel), shape_(shape), params_(p) {}
  void launch() override {
    attn::launch(*context_.cuda, kernel_, shape_, *context_.stream, params_);
  }

 private:
  ExecContext context_;
  CUfunction kernel_;
  LaunchShape shape_;
  FaultParams params_;
};

class FaultVariant : public Variant {
 public:
  FaultVariant(std::string name, int kind, std::string what)
      : name_(std::move(name)),
        kind_(kind),
        what_(std::move(what)),
        good_registry_(std::make_shared<Registry>()) {
    add_paged_decode_variants(*good_registry_);
    good_ = good_registry_->find("paged_decode.sm80_simt");
    ATTN_ASSERT(good_ != nullptr, "paged_decode.sm80_simt is registered");
  }
  std::string name() const override { return name_; }
  Family family() const override { return Family::paged_decode; }
  Backend backend() const override { return Backend::cuda; }
  std::string summary() const override {
    return "TEST ONLY: " + what_ + " with fault=1; fault=0 runs paged_decode.sm80_simt";
  }
  // What fault=1 takes: any decode batch of bf16/fp16 queries (its kernels compute nothing, they
  // fail). fault=0 is further held to paged_decode.sm80_simt's own check.
  FeatureSet features() const override {
    return FeatureSet()
        .with(feature::kQueries, {"decode"})
        .with(feature::kMask,
              {"causal", "non_causal", "block_sparse", "block_sparse_non_causal", "explicit"})
        .with(feature::kSlidingWindow)
        .with(feature::kLogitsSoftCap)
        .with(feature::kAttentionSinks)
        .with(feature::kSharedPrefix)
        .with(feature::kKvLayout, {"nhd", "hnd", "vllm"})
        .with(feature::kDtype, {"bf16", "fp16"})
        .with(feature::kKvDtype, {"fp8_e4m3.per_tensor", "fp8_e4m3.per_head", "bf16", "fp16"})
        .with(feature::kHeadDim, {64, 80, 96, 128, 192, 256})
        .with_range(feature::kPageSize, 1, 256);
  }
  std::vector<ConfigAxis> space(const Batch&, const Target&) const override {
    return {
        {"fault", {0, 1}, "1: the faulting kernel; 0: paged_decode.sm80_simt's default config"}};
  }
  KernelConfig default_config(const Batch&, const Target&) const override {
    return KernelConfig{{"fault", 0}};
  }
  Support supports(const Batch& batch, const KernelConfig& config,
                   const Target& target) const override {
    if (Support s = config_has_exactly(config, {"fault"}, name()); !s) return s;
    if (config.get("fault") == 0) {
      return good_->check(batch, good_->default_config(batch, target), target);
    }
    if (Support s = supports_sm80_target(target, "nanosleep"); !s) return s;
    const DType dtype = batch.spec.model.dtype;
    if (kind_ == test_faults::kBadPage && batch.spec.model.effective_kv_dtype() != dtype) {
      return Support::no("the K pool is not " + to_string(dtype));  // it reads 2-byte elements
    }
    return Support::yes();
  }
  std::vector<JitProgram> programs(const Batch& batch, const KernelConfig& config,
                                   const Target& target) const override {
    if (config.get("fault") == 0) {
      return good_->programs(batch, good_->default_config(batch, target), target);
    }
    JitProgram program;
    program.name = full_name(config);
    program.source = "#include \"kernels/test_faults/fault.cuh\"\n";
    program.kernels = {kernel_name()};
    program.arch = target.arch;
    return {program};
  }
  std::unique_ptr<Launcher> prepare(Problem& problem, const KernelConfig& config,
                                    ExecContext& context) const override {
    const Batch& batch = problem.batch();
    if (config.get("fault") == 0) {
      return good_->prepare(problem, good_->default_config(batch, context.target), context);
    }
    const JitProgram program = programs(batch, config, context.target).front();
    CUfunction kernel = context.loader->function(program, kernel_name());
    LaunchShape shape;
    shape.grid_x = 64;
    shape.block_x = 128;
    if (kind_ == test_faults::kSmem) {
      constexpr int kTooMuch = 1 << 20;  // more than any GPU's per-block limit
      allow_dynamic_shared_memory(context, kernel, kTooMuch);  // throws: launch_failed
      shape.shared_bytes = kTooMuch;
    }
    const ModelShape& m = batch.spec.model;
    FaultParams p{};
    p.out = problem.out();
    p.elements = (long long)batch.num_seqs * m.num_q_heads * m.head_dim;
    p.nan_bits = m.dtype == DType::bf16 ? 0x7fc0 : 0x7e00;
    p.k_pool = static_cast<const unsigned short*>(problem.k_pool());
    p.block_table = problem.block_table();
    // Every layout holds a page as its outermost dimension.
    p.page_elements = (long long)batch.page_size * m.num_kv_heads * m.head_dim;
    return std::make_unique<FaultLauncher>(context, kernel, shape, p);
  }
  Work work(const Batch& batch) const override { return paged_decode_work(batch); }

 private:
  std::string kernel_name() const {
    return "attn::test_faults::fault_kernel<" + std::to_string(kind_) + ">";
  }
  std::string name_;
  int kind_;
  std::string what_;
  std::shared_ptr<Registry> good_registry_;  // owns good_
  const Variant* good_ = nullptr;
};

}  // namespace

bool test_variants_enabled() {
  const char* flag = std::getenv("ATTN_BENCH_TEST_VARIANTS");
  return flag && std::string(flag) == "1";
}

void add_test_fault_variants(Registry& registry) {
  registry.add(std::make_unique<FaultVariant>("test.fault_oob_write", test_faults::kOobWrite,
                                              "writes 1 TiB past the output (illegal address)"));
  registry.add(std::make_unique<FaultVariant>(
      "test.fault_bad_page", test_faults::kBadPage,
      "reads the K pool through a page number far outside it (illegal address)"));
  registry.add(
      std::make_unique<FaultVariant>("test.fault_hang", test_faults::kHang, "never terminates"));
  registry.add(std::make_unique<FaultVariant>(
      "test.fault_smem", test_faults::kSmem,
      "asks for 1 MiB of dynamic shared memory (the launch is refused)"));
  registry.add(std::make_unique<FaultVariant>("test.fault_nan", test_faults::kNan,
                                              "writes NaN into the output (incorrect)"));
}

}  // namespace attn
