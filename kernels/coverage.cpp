#include "kernels/coverage.hpp"

#include "kernels/feature_set.hpp"
#include "kernels/target_description.hpp"
#include "workloads/batch.hpp"
#include "workloads/batch_features.hpp"

namespace attn {

namespace {

// The most configs of one variant's space tried on one batch before the variant is counted as
// declining it (every built-in space is far smaller).
constexpr size_t kMaxConfigsPerBatch = 1 << 16;

struct Cell {
  int head_dim = 0, v_head_dim = 0;
  DType dtype = DType::bf16;
  bool fp8 = false;
  KvLayout layout = KvLayout::nhd;
  int page_size = 16;
};

Cell cell_of(const std::string& head_dim, const std::string& kv_dtype, const std::string& layout,
             const std::string& page_size) {
  Cell c;
  if (head_dim == "192x128") {
    c.head_dim = 192;
    c.v_head_dim = 128;
  } else {
    c.head_dim = c.v_head_dim = std::stoi(head_dim);
  }
  c.dtype = kv_dtype == "fp16" ? DType::fp16 : DType::bf16;
  c.fp8 = kv_dtype == "fp8_e4m3";
  c.layout = layout == "HND" ? KvLayout::hnd : KvLayout::nhd;
  c.page_size = page_size == "1" ? 1 : page_size == "16" ? 16 : 12;
  return c;
}

// The shapes a family's variants take: each is one representative batch of a cell.
enum class Shape {
  decode,
  prefix_prefill,
  prefix_prefill_masked,
  prefill,
  sparse_prefill,
  sparse_decode
};

std::vector<Shape> family_shapes(Family family) {
  switch (family) {
    case Family::paged_decode:
      return {Shape::decode};
    case Family::prefix_prefill:
      return {Shape::prefix_prefill, Shape::prefix_prefill_masked};
    case Family::flash_fwd:
      return {Shape::prefill};
    case Family::blocksparse:
      return {Shape::sparse_prefill, Shape::sparse_decode};
    case Family::mla_decode:  // latent attention: kv_lora_rank and qk_rope_head_dim, not the axes
      return {};
  }
  return {};
}

// 8 q heads over 2 kv heads; lengths that span several pages of every page-size class and, for
// the block-sparse shapes, several 64-token layout blocks.
WorkloadSpec representative(const Cell& cell, Shape shape, KvScaleGranularity scale) {
  WorkloadSpec spec;
  spec.schema_version = kWorkloadSchemaVersion;
  spec.name = "coverage";
  spec.model.num_q_heads = 8;
  spec.model.num_kv_heads = 2;
  spec.model.head_dim = cell.head_dim;
  if (cell.v_head_dim != cell.head_dim) spec.model.v_head_dim = cell.v_head_dim;
  spec.model.dtype = cell.dtype;
  if (cell.fp8) {
    spec.model.kv_dtype = DType::fp8_e4m3;
    spec.model.kv_scale = scale;
  }
  spec.kv_cache.page_size = cell.page_size;
  spec.kv_cache.layout = cell.layout;
  spec.seed = 1;
  SequenceSpec seq;
  seq.count = 2;
  switch (shape) {
    case Shape::decode:
    case Shape::sparse_decode:
      seq.context_len = LengthSpec(200);
      seq.query_len = LengthSpec(1);
      break;
    case Shape::prefix_prefill:
    case Shape::prefix_prefill_masked:
      seq.context_len = LengthSpec(96);
      seq.query_len = LengthSpec(40);
      break;
    case Shape::prefill:
    case Shape::sparse_prefill:
      seq.context_len = LengthSpec(0);
      seq.query_len = LengthSpec(192);
      break;
  }
  spec.sequences = {seq};
  if (shape == Shape::prefix_prefill_masked) spec.mask.explicit_mask = ExplicitMaskSpec{};
  if (shape == Shape::sparse_prefill || shape == Shape::sparse_decode) {
    BlockSparseSpec sparse;
    sparse.block_size = 64;
    sparse.local_blocks = 1;
    sparse.vertical_stride = 2;
    spec.mask.block_sparse = sparse;
  }
  return spec;
}

// Every config of the space, in odometer order, at most `limit` of them.
std::vector<KernelConfig> configs_of(const std::vector<ConfigAxis>& axes, size_t limit) {
  std::vector<KernelConfig> configs(1);
  for (const ConfigAxis& axis : axes) {
    std::vector<KernelConfig> longer;
    for (const KernelConfig& prefix : configs) {
      for (int64_t value : axis.values) {
        if (longer.size() >= limit) break;
        KernelConfig config = prefix;
        config.set(axis.name, value);
        longer.push_back(std::move(config));
      }
    }
    configs = std::move(longer);
  }
  return configs;
}

// Whether the variant takes the batch with its default config or, failing that, some config of
// its space (a feature it does not declare: none).
bool accepts(const Variant& variant, const FeatureSet& declared, const Batch& batch,
             const BatchFeatures& used, const Target& target) {
  if (!check_features(declared, used)) return false;
  if (variant.check(batch, used, variant.default_config(batch, target), target)) return true;
  for (const KernelConfig& config : configs_of(variant.space(batch, target), kMaxConfigsPerBatch)) {
    if (variant.check(batch, used, config, target)) return true;
  }
  return false;
}

}  // namespace

bool accepts_with_some_config(const Variant& variant, const Batch& batch, const Target& target) {
  return accepts(variant, variant.features(), batch, batch_features(batch), target);
}

bool in_coverage_matrix(Family family) {
  return !family_shapes(family).empty();
}

const CoverageAxes& coverage_axes() {
  static const CoverageAxes axes = {{"64", "80", "96", "128", "192", "256", "192x128"},
                                    {"bf16", "fp16", "fp8_e4m3"},
                                    {"NHD", "HND"},
                                    {"1", "16", "other"}};
  return axes;
}

std::vector<CoverageCell> coverage_matrix(const Registry& registry) {
  // The default description: an H100-like sm_90a, on which every CUDA variant can run.
  const Target gpu = described_cuda_target(TargetDescription{}), cpu = Target::cpu();
  std::vector<Family> families;
  std::vector<FeatureSet> declared;
  for (const auto& variant : registry.variants()) {
    declared.push_back(variant->features());
    bool seen = !in_coverage_matrix(variant->family());
    for (Family f : families) seen = seen || f == variant->family();
    if (!seen) families.push_back(variant->family());
  }
  const CoverageAxes& axes = coverage_axes();
  std::vector<CoverageCell> out;
  for (Family family : families) {
    for (const std::string& head_dim : axes.head_dims) {
      for (const std::string& kv_dtype : axes.kv_dtypes) {
        for (const std::string& layout : axes.layouts) {
          for (const std::string& page_size : axes.page_sizes) {
            const Cell cell = cell_of(head_dim, kv_dtype, layout, page_size);
            std::vector<Batch> batches;
            std::vector<BatchFeatures> uses;
            for (Shape shape : family_shapes(family)) {
              const std::vector<KvScaleGranularity> scales =
                  cell.fp8 ? std::vector<KvScaleGranularity>{KvScaleGranularity::per_tensor,
                                                             KvScaleGranularity::per_head}
                           : std::vector<KvScaleGranularity>{KvScaleGranularity::per_tensor};
              for (KvScaleGranularity scale : scales) {
                batches.push_back(generate_batch(representative(cell, shape, scale)));
                uses.push_back(batch_features(batches.back()));
              }
            }
            CoverageCell row{family, head_dim, kv_dtype, layout, page_size, {}, {}};
            for (size_t v = 0; v < registry.variants().size(); ++v) {
              const Variant& variant = *registry.variants()[v];
              if (variant.family() != family) continue;
              const bool on_gpu = variant.backend() == Backend::cuda;
              bool taken = false;
              for (size_t b = 0; b < batches.size() && !taken; ++b) {
                taken = accepts(variant, declared[v], batches[b], uses[b], on_gpu ? gpu : cpu);
              }
              if (taken) (on_gpu ? row.gpu_variants : row.cpu_variants).push_back(variant.name());
            }
            out.push_back(std::move(row));
          }
        }
      }
    }
  }
  return out;
}

}  // namespace attn
