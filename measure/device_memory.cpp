#include "measure/device_memory.hpp"

#include <algorithm>

#include "base/byte_size.hpp"
#include "base/errors.hpp"
#include "workloads/memory_estimate.hpp"

namespace attn {

DeviceMemoryNeed device_memory_need(const Batch& batch, bool gpu_reference, bool device_fill,
                                    int64_t l2_bytes) {
  const BatchMemory m = estimate_batch_memory(batch.spec);
  const int64_t n = batch.num_seqs;
  DeviceMemoryNeed need;
  // Q and the output, the pools, the padded block table, kv_lens and cu_seqlens_q (int32); a
  // device fill uploads the CSR page table for its kernels besides.
  need.inputs = 2 * m.query + m.kv_pools + m.block_table + 4 * n + 4 * (n + 1);
  if (device_fill) need.inputs += 4 * (n + 1) + 4 * int64_t(batch.page_indices.size());
  need.masks = m.masks;
  if (gpu_reference) {
    need.reference = m.reference;
    if (device_fill) need.reference += 2 * m.query + m.kv_pools + m.block_table;
  }
  // The flush's two buffers are twice the L2 each; the rotation's copies of small problems add up
  // to about twice the L2 more (measure/evaluator.cpp). Copies of a large problem whose launch
  // reads little of it (a short window) are made only in half the memory still free when the case
  // is timed (measure/rotation_copies.hpp), so they are not part of this need.
  need.timing = 2 * std::max<int64_t>(2 * l2_bytes, int64_t(1) << 20) + 4 * l2_bytes;
  // An fp8 cache: 16-bit copies of every sequence's context and of the new tokens' rows (16-row
  // aligned; the gathered keys are fewer), K and V: those prefix_prefill.sm90_wgmma's kernel
  // converts (fp8_dequant=1; the context in tiles of up to 128 keys), and the dequantisation pass
  // of flash_fwd.sm90_wgmma and blocksparse.sm90_wgmma.
  if (batch.kv_fp8()) {
    const ModelShape& model = batch.spec.model;
    const int64_t row = int64_t(model.num_kv_heads) *
                        (model.head_dim + model.effective_v_head_dim()) * 2;  // K and V, 16-bit
    const int64_t tile = 128;  // the largest copy tile
    int64_t rows = 0;
    for (int s = 0; s < batch.num_seqs; ++s) {
      const int64_t context = batch.context_lens[size_t(s)];
      rows += (context + tile - 1) / tile * tile;
      rows += (batch.query_lens[size_t(s)] + 15) / 16 * 16;
    }
    need.workspace = rows * row;
  }
  // Split-KV partial outputs and other workspaces, the modules of the variants, and the rounding
  // of every allocation: a tenth of the rest, and 256 MiB.
  need.margin = (need.inputs + need.masks + need.reference + need.timing + need.workspace) / 10 +
                (int64_t(256) << 20);
  return need;
}

void check_device_memory(const DeviceMemoryNeed& need, const CudaContext& context,
                         const std::string& source) {
  size_t free_bytes = 0, total_bytes = 0;
  context.make_current();
  ATTN_CU_CHECK(context.api(), cuMemGetInfo(&free_bytes, &total_bytes));
  if (need.total() <= int64_t(free_bytes)) return;
  throw InputError(
      source,
      {"(device memory): the batch needs about " + format_bytes(need.total()) + " on " +
       context.info().name + " (inputs " + format_bytes(need.inputs) + ", masks " +
       format_bytes(need.masks) + ", GPU reference " + format_bytes(need.reference) + ", timing " +
       format_bytes(need.timing) + ", fp8 dequantisation " + format_bytes(need.workspace) +
       ", workspace margin " + format_bytes(need.margin) + "), and " +
       format_bytes(int64_t(free_bytes)) + " of its " + format_bytes(int64_t(total_bytes)) +
       " are free; use a smaller batch (fewer or shorter sequences, fewer pages) or free "
       "the GPU"});
}

}  // namespace attn
