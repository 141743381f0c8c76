// Which oracle verifies a CUDA evaluation: the CPU reference (double precision, multi-threaded;
// kernels/reference/paged_attention_reference.hpp) or a GPU reference (fp32; the tiled one,
// kernels/reference/gpu_tiled_reference.hpp, or for latent attention the naive one,
// kernels/reference/gpu_reference.hpp). All implement the same semantics; the CPU one is the
// stricter oracle and the GPU one the quick one. `auto` takes the GPU reference when the problem's
// work, visible (q head, query, key) triples times head_dim, is at least a threshold: by default
// what the CPU reference verifies in about 2 s on a 16-core host (docs/measurement.md). A CPU
// evaluation (the CPU reference variant) always verifies against the dense naive attention.
#pragma once

#include <optional>
#include <string>

#include "workloads/batch.hpp"

namespace attn {

enum class ReferenceOracle { cpu, gpu, automatic };
std::string to_string(ReferenceOracle oracle);  // cpu|gpu|auto
std::optional<ReferenceOracle> reference_oracle_from_string(const std::string& text);

// The default threshold of `auto` on reference_work(): the CPU reference does about 1e8 of these
// units per second of one core (1.06e8 measured: a 1024-token causal prefill, 8 heads, head dim
// 128, one thread, Release build, CPU time on the x86-64 build machine), so 3.2e9 is about 2 s
// on the GPU machine's 16 cores.
inline constexpr double kDefaultGpuReferenceMinWork = 3.2e9;

// visible_pairs(batch) * head_dim: the multiply-adds of q.k (and again of p.v) over the batch;
// with a narrower V (v_head_dim), visible pairs times the mean of the two widths.
double reference_work(const Batch& batch);

// Whether a CUDA evaluation of `batch` verifies against a GPU reference (the tiled one, or for
// multi-head latent attention the naive one: gpu_reference_name_for): never for a batch the naive
// GPU reference declines (gpu_reference_supports), which the CPU reference verifies whatever the
// oracle asked for.
bool use_gpu_reference(const Batch& batch, ReferenceOracle oracle, double min_work);

// Why `oracle` chose as it did, for the run's header: "--reference gpu", or
// "auto: visible pairs x head_dim 6.9e+10 >= 3.2e+09".
std::string describe_reference_choice(const Batch& batch, ReferenceOracle oracle, double min_work);

}  // namespace attn
