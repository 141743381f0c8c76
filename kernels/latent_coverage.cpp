#include "kernels/latent_coverage.hpp"

#include "kernels/coverage.hpp"
#include "kernels/target_description.hpp"
#include "workloads/batch.hpp"
#include "workloads/workload_spec.hpp"

namespace attn {

namespace {

// One representative latent workload of a cell: `query_len` tokens for each of two sequences
// over 200 and 137 cached tokens.
Batch representative_latent_batch(const std::string& shape, const std::string& kv_dtype,
                                  const std::string& page_size, int query_len) {
  const size_t plus = shape.find('+');
  const std::string rank = shape.substr(0, plus), rope = shape.substr(plus + 1);
  const std::string pages = page_size == "1" ? "1" : page_size == "16" ? "16" : "12";
  const std::string dtype = kv_dtype == "fp16" ? "fp16" : "bf16";
  const std::string fp8 = kv_dtype == "fp8_e4m3" ? R"(, "kv_dtype": "fp8_e4m3")" : "";
  const std::string query = std::to_string(query_len);
  const std::string text =
      R"({"schema_version": 2, "name": "latent-coverage", "model": {"attention": "mla", )"
      R"("num_q_heads": 8, "kv_lora_rank": )" +
      rank + R"(, "qk_rope_head_dim": )" + rope + R"(, "dtype": ")" + dtype + "\"" + fp8 +
      R"(}, "kv_cache": {"page_size": )" + pages +
      R"(, "layout": "NHD"}, "sequences": [{"context_len": 200, "query_len": )" + query +
      R"(}, {"context_len": 137, "query_len": )" + query + R"(}], "seed": 1})";
  return generate_batch(parse_workload(text, "latent coverage"));
}

}  // namespace

const LatentCoverageAxes& latent_coverage_axes() {
  static const LatentCoverageAxes axes = {{"512+64", "512+128", "256+64", "1024+128", "512+32"},
                                          {"bf16", "fp16", "fp8_e4m3"},
                                          {"1", "16", "other"}};
  return axes;
}

std::vector<LatentCoverageCell> latent_coverage_matrix(const Registry& registry) {
  const Target gpu = described_cuda_target(TargetDescription{}), cpu = Target::cpu();
  std::vector<Family> families;
  for (const auto& variant : registry.variants()) {
    bool seen = in_coverage_matrix(variant->family());
    for (Family f : families) seen = seen || f == variant->family();
    if (!seen) families.push_back(variant->family());
  }
  const LatentCoverageAxes& axes = latent_coverage_axes();
  std::vector<LatentCoverageCell> out;
  for (Family family : families) {
    for (const std::string& shape : axes.shapes) {
      for (const std::string& kv_dtype : axes.kv_dtypes) {
        for (const std::string& page_size : axes.page_sizes) {
          const Batch batches[] = {representative_latent_batch(shape, kv_dtype, page_size, 1),
                                   representative_latent_batch(shape, kv_dtype, page_size, 2)};
          LatentCoverageCell cell{family, shape, kv_dtype, page_size, {}, {}};
          for (const auto& variant : registry.variants()) {
            if (variant->family() != family) continue;
            const bool on_gpu = variant->backend() == Backend::cuda;
            bool taken = false;
            for (const Batch& batch : batches) {
              taken = taken || accepts_with_some_config(*variant, batch, on_gpu ? gpu : cpu);
            }
            if (taken) (on_gpu ? cell.gpu_variants : cell.cpu_variants).push_back(variant->name());
          }
          out.push_back(std::move(cell));
        }
      }
    }
  }
  return out;
}

}  // namespace attn
