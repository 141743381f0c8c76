#include "measure/evaluator.hpp"

#include <algorithm>
#include <cmath>

#include "base/errors.hpp"
#include "kernels/device/sticky_errors.hpp"
#include "kernels/reference/gpu_reference.hpp"
#include "kernels/reference/gpu_tiled_reference.hpp"
#include "kernels/reference/paged_attention_reference.hpp"
#include "measure/device_memory.hpp"
#include "measure/rotation_copies.hpp"
#include "measure/verify.hpp"

namespace attn {

namespace {

// A failed driver call: launch_failed, or crashed when the error is sticky (the context is lost,
// and `lost` says why).
void record_call_failure(Measurement& m, const CallError& e, const std::string& when,
                         std::string& lost) {
  if (is_sticky_cuda_error(e)) {
    m.disposition = Disposition::crashed;
    m.reason = "sticky CUDA error" + (when.empty() ? std::string() : " " + when) +
               " (the context is lost): " + e.what();
    lost = m.variant + " {" + m.config_key + "}: " + e.what();
  } else {
    m.disposition = Disposition::launch_failed;
    m.reason = when.empty() ? std::string(e.what()) : when + ": " + e.what();
  }
}

}  // namespace

Measurement case_measurement(const Variant& variant, const KernelConfig& config,
                             const MeasurePolicy& policy) {
  Measurement m;
  m.family = to_string(variant.family());
  m.variant = variant.name();
  m.config_key = config.key();
  m.config_json = config.to_json().dump();
  m.backend = to_string(variant.backend());
  m.policy = policy.name;
  return m;
}

Evaluator::Evaluator(const Batch& batch, Options options)
    : batch_(batch), options_(std::move(options)), host_(Problem::on_host(batch)) {
  context_.cpu_threads = options_.cpu_threads;
}

Evaluator::~Evaluator() = default;

std::unique_ptr<Evaluator> Evaluator::on_cpu(const Batch& batch, Options options) {
  std::unique_ptr<Evaluator> e(new Evaluator(batch, std::move(options)));
  e->context_.target = Target::cpu();
  e->reference_name_ = "naive_dense";
  return e;
}

std::unique_ptr<Evaluator> Evaluator::on_cuda(const Batch& batch,
                                              std::shared_ptr<const DriverApi> api,
                                              const DeviceInfo& device, JitCompiler& jit,
                                              Options options) {
  // The device's free memory against what the batch needs there, before anything is allocated
  // (on the device or for the host problem).
  auto cuda = std::make_unique<CudaContext>(std::move(api), device);
  const bool gpu_reference =
      use_gpu_reference(batch, options.reference, options.gpu_reference_min_work);
  check_device_memory(device_memory_need(batch, gpu_reference, Problem::prefers_device_fill(batch),
                                         int64_t(device.l2_bytes)),
                      *cuda, "workload \"" + batch.spec.name + "\"");
  std::unique_ptr<Evaluator> e(new Evaluator(batch, std::move(options)));
  e->cuda_ = std::move(cuda);
  e->stream_ = std::make_unique<Stream>(*e->cuda_);
  e->loader_ = std::make_unique<KernelLoader>(*e->cuda_, jit);
  e->workspace_ = std::make_unique<Workspace>(*e->cuda_);
  e->flusher_ = std::make_unique<L2Flusher>(*e->cuda_, *e->loader_, size_t(device.l2_bytes));
  try {
    e->probe_ = std::make_unique<ClockProbe>(*e->cuda_, *e->loader_, device.arch());
  } catch (const Error& error) {  // measure anyway, without clock filtering, and say so
    e->clock_note_ = std::string("SM clock probe unavailable: ") + error.what();
  }
  std::string why_no_nvml;
  e->nvml_ = NvmlMonitor::open(device.uuid, &why_no_nvml);
  if (!e->nvml_) {
    e->clock_note_ += (e->clock_note_.empty() ? "" : "; ") + why_no_nvml + " (no temperature)";
  }
  // Large batches are generated on the GPU (same bytes as the host fill, no PCIe copy); the
  // reference still reads the host problem (the GPU reference an upload of it), so every such run
  // also checks CPU/GPU determinism.
  e->device_generated_ = Problem::prefers_device_fill(batch);
  e->device_.emplace(e->device_generated_
                         ? Problem::generated_on_device(batch, *e->cuda_, *e->loader_, *e->stream_)
                         : Problem::on_device(e->host_, *e->cuda_));
  e->context_.target = Target::cuda(device);
  e->context_.cuda = e->cuda_.get();
  e->context_.stream = e->stream_.get();
  e->context_.loader = e->loader_.get();
  e->context_.workspace = e->workspace_.get();
  e->reference_name_ =
      use_gpu_reference(batch, e->options_.reference, e->options_.gpu_reference_min_work)
          ? gpu_reference_name_for(batch)
          : "cpu_reference";
  return e;
}

std::string Evaluator::reference_choice() const {
  if (!cuda_) return "the CPU backend";
  return describe_reference_choice(batch_, options_.reference, options_.gpu_reference_min_work);
}

const std::vector<float>& Evaluator::reference() {
  if (reference_) return *reference_;
  if (!cuda_) {
    reference_ = naive_dense_attention(batch_, options_.cpu_threads);
  } else if (reference_name_ == kGpuTiledReferenceName || reference_name_ == kGpuReferenceName) {
    // Computed before the first variant launch, so device_ holds the inputs as uploaded. A device
    // problem generated on the GPU would share its fill with the variants' inputs; the oracle reads
    // an upload of the host problem instead (freed once it has run), which keeps the check that the
    // two fills agree.
    std::optional<Problem> upload;
    if (device_generated_) upload.emplace(Problem::on_device(host_, *cuda_));
    const Problem& inputs = upload ? *upload : *device_;
    reference_ = reference_name_ == kGpuReferenceName  // mla: the tiled one declines latent rows
                     ? gpu_paged_attention_reference(inputs, *cuda_, *loader_, *stream_)
                     : gpu_tiled_paged_attention_reference(inputs, *cuda_, *loader_, *stream_);
  } else {
    reference_ = paged_attention_reference(host_, options_.cpu_threads);
  }
  return *reference_;
}

Measurement Evaluator::evaluate(const Variant& variant, const KernelConfig& config,
                                const MeasurePolicy& policy, const PhaseObserver& on_phase) {
  if (!context_lost_.empty()) {
    throw EnvironmentError("the CUDA context was lost to a sticky error in " + context_lost_ +
                           "; nothing more can run in this process (tune with --isolate workers)");
  }
  auto phase = [&](EvalPhase p) {
    if (on_phase) on_phase(p);
  };
  Measurement m = case_measurement(variant, config, policy);
  const Work work = variant.work(batch_);
  m.bytes = work.bytes;
  m.unique_bytes = work.unique_bytes;
  m.flops = work.flops;

  if (variant.backend() != context_.target.backend) {
    m.disposition = Disposition::unsupported;
    m.reason = "variant runs on " + to_string(variant.backend()) + ", this evaluator on " +
               to_string(context_.target.backend);
    return m;
  }
  if (Support support = variant.check(batch_, config, context_.target); !support) {
    m.disposition = Disposition::unsupported;
    m.reason = support.reason;
    return m;
  }
  Problem& problem = device_ ? *device_ : host_;

  std::unique_ptr<Launcher> launcher;
  phase(EvalPhase::compile);
  try {
    launcher = variant.prepare(problem, config, context_);
    m.plan = launcher->plan();
  } catch (const CompileError& e) {
    m.disposition = Disposition::compile_failed;
    m.reason = e.what();
    return m;
  } catch (const CallError& e) {
    record_call_failure(m, e, "", context_lost_);
    return m;
  }

  // Verify on a poisoned output before any timing. The oracle runs first (once per evaluator), so
  // that the GPU reference reads the device inputs before any variant's first launch.
  phase(EvalPhase::verify);
  const std::vector<float>* expected = nullptr;
  try {
    expected = &reference();
  } catch (const CallError& e) {  // the oracle's failure is not the variant's: no disposition
    if (is_sticky_cuda_error(e)) context_lost_ = std::string("the GPU reference: ") + e.what();
    throw;
  }
  std::vector<uint8_t> output;
  try {
    problem.poison_output(context_.stream);
    launcher->launch();
    if (stream_) stream_->synchronize();
    output = problem.read_output();
  } catch (const CallError& e) {
    record_call_failure(m, e, "", context_lost_);
    return m;
  }
  m.verification = verify_output(output.data(), batch_.spec.model.dtype, *expected,
                                 batch_.spec.model.effective_v_head_dim(), reference_name_);
  if (!verification_passed(m.verification)) {
    m.disposition = Disposition::incorrect;
    m.reason = describe(m.verification);
    return m;
  }

  phase(EvalPhase::measure);
  try {
    if (cuda_) {
      std::vector<std::unique_ptr<Launcher>> owned;
      const RotationFactory rotation_factory = [&](double) {
        return rotation(variant, config, *launcher, owned);
      };
      const CudaTimingTools tools{cuda_.get(), stream_.get(), flusher_.get(), probe_.get(),
                                  nvml_.get()};
      time_on_cuda(*launcher, rotation_factory, policy, tools, m, options_.sampling);
    } else {
      time_on_cpu(*launcher, policy, m, options_.sampling);
    }
  } catch (const CallError& e) {
    record_call_failure(m, e, "while timing", context_lost_);
    return m;
  }
  m.disposition = Disposition::passed;
  return m;
}

std::vector<Launcher*> Evaluator::rotation(const Variant& variant, const KernelConfig& config,
                                           Launcher& first,
                                           std::vector<std::unique_ptr<Launcher>>& owned) {
  // Copies of the inputs so that the launches of one graph together read at least twice the L2
  // from DRAM: by what one launch must read (a window's rows, a shared prefix once), within the
  // device memory left (copies made for an earlier case are already counted as used).
  size_t free = 0, total = 0;
  ATTN_CU_CHECK(cuda_->api(), cuMemGetInfo(&free, &total));
  const double copy = double(host_.total_bytes());
  const size_t copies =
      rotation_copies(variant.work(batch_).unique_bytes, double(cuda_->info().l2_bytes), copy,
                      double(free) + double(rotation_problems_.size()) * copy);
  while (rotation_problems_.size() + 1 < copies) {
    rotation_problems_.push_back(Problem::on_device(host_, *cuda_));
  }
  std::vector<Launcher*> launchers{&first};
  for (size_t i = 0; i + 1 < copies; ++i) {
    owned.push_back(variant.prepare(rotation_problems_[i], config, context_));
    launchers.push_back(owned.back().get());
  }
  return launchers;
}

}  // namespace attn
