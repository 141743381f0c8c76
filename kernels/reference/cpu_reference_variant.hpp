// The CPU oracle (paged_attention_reference) as a variant of any family, so that `attn-bench run`
// works end to end on a machine without a GPU. Each family's `<family>.cpu_reference` differs
// only in which batches it takes (the oracle's features within the family's scope), how its work
// is counted and its one-line summary.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "kernels/variant.hpp"

namespace attn {

// Runs the oracle on a host problem and stores its output in the output dtype; with `lse`
// non-null also writes each row's log-sum-exp there ([total_q, num_q_heads] host floats).
class CpuReferenceLauncher : public Launcher {
 public:
  CpuReferenceLauncher(Problem& problem, size_t threads, float* lse = nullptr)
      : problem_(problem), threads_(threads), lse_(lse) {}
  void launch() override;

 private:
  Problem& problem_;
  size_t threads_;
  float* lse_;
};

// Every feature the oracle implements: every value the workload schema allows, and those only
// batches built in code use (non-causal block-sparse masks, K/V of the other 16-bit dtype). A
// family's CPU reference narrows it to the family's scope; a new feature joins it when
// paged_attention_reference and key_visible implement it.
FeatureSet reference_features();
// reference_features() less multi-head latent attention, for the CPU references of the families
// of standard attention (mla_decode.cpu_reference runs latent attention).
FeatureSet standard_attention_reference_features();

struct CpuReferenceTraits {
  Family family;
  std::string summary;
  FeatureSet features;
  // A rule of the family beyond the features (on the CPU backend); empty: none.
  std::function<Support(const Batch&)> supports_batch;
  std::function<Work(const Batch&)> work;
};

// `<family>.cpu_reference`: no config axes, CPU backend only.
std::unique_ptr<Variant> make_cpu_reference_variant(CpuReferenceTraits traits);

}  // namespace attn
