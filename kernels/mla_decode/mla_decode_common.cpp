// What the mla_decode family declares and counts, and its registration.
#include "kernels/mla_decode/mla_decode_variants.hpp"
#include "kernels/registry.hpp"
#include "kernels/rule_message.hpp"
#include "workloads/workload_validation.hpp"

namespace attn {

std::unique_ptr<Variant> make_mla_decode_sm80_mma();
std::unique_ptr<Variant> make_mla_decode_sm90_wgmma();
std::unique_ptr<Variant> make_mla_decode_sm90_wgmma_key_rows();
std::unique_ptr<Variant> make_mla_decode_cpu_reference();

FeatureSet mla_decode_common_features() {
  return FeatureSet()
      .with(feature::kLatentAttention)
      .with(feature::kQueries, {"decode", "prefill", "mixed"})
      .with(feature::kMask, {"causal", "non_causal"})
      .with(feature::kSharedPrefix)
      .with(feature::kKvLayout, {"nhd"})
      .with(feature::kDtype, {"bf16", "fp16"})
      .with_range(feature::kKvLoraRank, kMinKvLoraRank, kMaxKvLoraRank)
      .with_range(feature::kPageSize, 1, kMaxPageSize)
      .note(feature::kHeadDim, "paged_decode and prefix_prefill run standard attention");
}

FeatureSet mla_decode_features() {
  return mla_decode_common_features()
      .with(feature::kKvDtype, {"fp8_e4m3.per_tensor"})
      .with_range(feature::kQkRopeHeadDim, kMinQkRopeHeadDim, kMaxQkRopeHeadDim);
}

Support mla_decode_supports_batch(const Batch& batch) {
  if (batch.max_query_len() > kMlaDecodeMaxQueryTokens) {
    return Support::no("mla_decode takes up to " + std::to_string(kMlaDecodeMaxQueryTokens) +
                       " query tokens per sequence (decode and speculative decode); this batch "
                       "has " +
                       std::to_string(batch.max_query_len()));
  }
  return Support::yes();
}

Support mla_sm90_supports(const Batch& batch, const KernelConfig& config, const Target& target,
                          const ConfigAxes& axes, const std::string& name,
                          const std::function<MlaSm90Rules()>& rules) {
  if (Support s = supports_sm90_target(target, "wgmma, TMA, mbarrier transactions"); !s) return s;
  if (Support s = mla_decode_supports_batch(batch); !s) return s;
  if (Support s = axes.has_exactly(config, name); !s) return s;
  const MlaSm90Rules r = rules();
  if (r.rule != 0) {
    const MlaRuleNumbers& n = r.numbers;
    return Support::no(fill_rule(r.rule_text, {{"rank", n.rank},
                                               {"rope", n.rope},
                                               {"page_size", n.page_size},
                                               {"shared_bytes", n.shared_bytes},
                                               {"shared_limit", n.shared_limit},
                                               {"register_estimate", n.register_estimate},
                                               {"register_limit", n.register_limit}}));
  }
  return supports_split_launch(r.numbers.shared_bytes, r.num_splits, r.max_splits, target,
                               "planned");
}

Work mla_decode_work(const Batch& batch) {
  return minimum_work(batch, KvStorage::paged);
}

void add_mla_decode_variants(Registry& registry) {
  registry.add(make_mla_decode_sm80_mma());
  registry.add(make_mla_decode_sm90_wgmma());
  registry.add(make_mla_decode_sm90_wgmma_key_rows());
  registry.add(make_mla_decode_cpu_reference());
}

int64_t mla_rows_of(const Batch& batch, int s) {
  return batch.query_lens[size_t(s)] * batch.spec.model.num_q_heads;
}

JitProgram mla_decode_program(const std::string& config_name, const Batch& batch,
                              const Target& target, const std::string& header, std::string kernel) {
  const ModelShape& m = batch.spec.model;
  JitProgram program;
  program.name = config_name + ".r" + std::to_string(m.kv_lora_rank) + ".rope" +
                 std::to_string(m.qk_rope_head_dim) + "." + to_string(m.dtype) +
                 (batch.kv_fp8() ? ".fp8_e4m3" : "");
  program.source = "#include \"" + header + "\"\n";
  program.kernels = {std::move(kernel)};
  program.arch = target.arch;
  return program;
}

}  // namespace attn
