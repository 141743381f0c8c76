#include "workloads/workload_spec.hpp"

namespace attn {

std::string to_string(AttentionKind kind) {
  return kind == AttentionKind::mla ? "mla" : "mha";
}

std::optional<AttentionKind> attention_kind_from_string(const std::string& text) {
  if (text == "mha") return AttentionKind::mha;
  if (text == "mla") return AttentionKind::mla;
  return std::nullopt;
}

std::string to_string(KvLayout layout) {
  switch (layout) {
    case KvLayout::nhd:
      return "NHD";
    case KvLayout::hnd:
      return "HND";
    case KvLayout::vllm:
      return "vllm";
  }
  return "?";
}

std::optional<KvLayout> kv_layout_from_string(const std::string& text) {
  if (text == "NHD") return KvLayout::nhd;
  if (text == "HND") return KvLayout::hnd;
  if (text == "vllm") return KvLayout::vllm;
  return std::nullopt;
}

std::string to_string(PageAllocation allocation) {
  switch (allocation) {
    case PageAllocation::sequential:
      return "sequential";
    case PageAllocation::shuffled:
      return "shuffled";
    case PageAllocation::fragmented:
      return "fragmented";
    case PageAllocation::shared_prefix:
      return "shared_prefix";
  }
  return "?";
}

std::optional<PageAllocation> page_allocation_from_string(const std::string& text) {
  if (text == "sequential") return PageAllocation::sequential;
  if (text == "shuffled") return PageAllocation::shuffled;
  if (text == "fragmented") return PageAllocation::fragmented;
  if (text == "shared_prefix") return PageAllocation::shared_prefix;
  return std::nullopt;
}

std::string to_string(KvScaleGranularity granularity) {
  return granularity == KvScaleGranularity::per_tensor ? "per_tensor" : "per_head";
}

std::optional<KvScaleGranularity> kv_scale_granularity_from_string(const std::string& text) {
  if (text == "per_tensor") return KvScaleGranularity::per_tensor;
  if (text == "per_head") return KvScaleGranularity::per_head;
  return std::nullopt;
}

std::string to_string(LengthDistribution distribution) {
  switch (distribution) {
    case LengthDistribution::fixed:
      return "fixed";
    case LengthDistribution::uniform:
      return "uniform";
    case LengthDistribution::normal:
      return "normal";
    case LengthDistribution::lognormal:
      return "lognormal";
    case LengthDistribution::zipf:
      return "zipf";
  }
  return "?";
}

std::string to_string(TracePhase phase) {
  switch (phase) {
    case TracePhase::prefill:
      return "prefill";
    case TracePhase::decode:
      return "decode";
    case TracePhase::chunked_prefill:
      return "chunked_prefill";
  }
  return "?";
}

std::optional<TracePhase> trace_phase_from_string(const std::string& text) {
  if (text == "prefill") return TracePhase::prefill;
  if (text == "decode") return TracePhase::decode;
  if (text == "chunked_prefill") return TracePhase::chunked_prefill;
  return std::nullopt;
}

std::optional<ExplicitMaskKind> explicit_mask_kind_from_string(const std::string& text) {
  if (text == "causal") return ExplicitMaskKind::causal;
  if (text == "tree") return ExplicitMaskKind::tree;
  if (text == "branches") return ExplicitMaskKind::branches;
  if (text == "random") return ExplicitMaskKind::random;
  if (text == "file") return ExplicitMaskKind::file;
  return std::nullopt;
}

std::string to_string(ExplicitMaskKind kind) {
  switch (kind) {
    case ExplicitMaskKind::causal:
      return "causal";
    case ExplicitMaskKind::tree:
      return "tree";
    case ExplicitMaskKind::branches:
      return "branches";
    case ExplicitMaskKind::random:
      return "random";
    case ExplicitMaskKind::file:
      return "file";
  }
  return "?";
}

}  // namespace attn
