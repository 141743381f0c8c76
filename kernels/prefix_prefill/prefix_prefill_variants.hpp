// The prefix_prefill family: each sequence's new tokens attend to its cached context (read through
// the page table) and causally to the new tokens themselves (seed 002's semantics); the masked
// variant reads an explicit (query_len, context_len + query_len) mask instead (seed 000).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/prefix_prefill/sm80_mma_params.hpp"
#include "kernels/variant.hpp"

namespace attn {

class Registry;

// Registers prefix_prefill.sm80_mma, prefix_prefill.sm80_mma_masked and prefix_prefill.sm90_wgmma
// (CUDA) and prefix_prefill.cpu_reference.
void add_prefix_prefill_variants(Registry& registry);

// What the family's CUDA variants implement: any query shape (decode rows pack the GQA group),
// causal or non-causal masks, sliding window, soft-cap, sinks, shared prefixes, NHD, HND and vllm
// pools, bf16/fp16 Q, K/V of Q's dtype or fp8 e4m3 with per-tensor or per-head scales, head dims
// 64, 128 and 256 with V as wide, pages of 1 to 256 tokens. Block-sparse layouts are the
// blocksparse family's. The variants widen or narrow it (prefix_prefill.sm80_mma and _masked:
// also head dims 80, 96 and 192 and a narrower V; _masked: explicit masks instead; sm90_wgmma:
// also head dims 80, 96 and 192 and 192 with a V of 128, but no window, no vllm layout).
FeatureSet prefix_prefill_features();

// Limits of the CUDA prefix_prefill kernels on a batch: one sink logit per q head, a sequence to
// run, positions and token indices that fit their 32-bit arithmetic.
Support prefix_prefill_supports_limits(const Batch& batch);

// Byte strides of the K or V pool in the batch's layout (mma_params.hpp, PoolStrides): key-major
// for NHD, HND and vLLM's x-packed K; dim-major for vLLM's V. K's rows are head_dim wide, V's
// v_head_dim (ModelShape::effective_v_head_dim).
PoolStrides prefix_prefill_pool_strides(const Batch& batch, bool value);
// Whether the batch's V pool is dim-major (vLLM's [pages, kv_heads, head_dim, page_size]).
bool prefix_prefill_v_dim_major(const Batch& batch);

// The new tokens' K and V laid out contiguously, as seed 002's kernel receives them:
// [new_rows, kv_heads, head_dim] (V: v_head_dim wide, and [kv_heads, v_head_dim, new_rows] when the
// pool's V is dim-major), each sequence's rows from seqs[s].new_start, a multiple of kNewRowAlign,
// with zero rows up to the next sequence's start.
struct PrefixPrefillNewTokens {
  static constexpr int kNewRowAlign = 16;
  const PrefixPrefillSeq* seqs = nullptr;  // device [num_seqs]
  void* k_new = nullptr;
  void* v_new = nullptr;
  int64_t new_rows = 0;  // at least kNewRowAlign
};
// Per sequence: its lengths and where its rows start in Q/out and in K_new/V_new.
std::vector<PrefixPrefillSeq> prefix_prefill_seq_table(const Batch& batch);
// Rows of K_new and V_new: every sequence's rounded up to kNewRowAlign (the last one's end in the
// table), at least kNewRowAlign.
int64_t prefix_prefill_new_rows(const std::vector<PrefixPrefillSeq>& seqs);
// Uploads the per-sequence table and slot mapping, allocates K_new and V_new, and runs `gather`
// (attn::prefix_prefill_gather, kernels/prefix_prefill/gather.cuh) once on the context's stream.
// The device buffers it allocates are appended to `owned`, which must outlive the kernels that
// read them.
PrefixPrefillNewTokens gather_new_tokens(Problem& problem, ExecContext& context, CUfunction gather,
                                         std::vector<DeviceBuffer>& owned);

// The q tiles of tile_tokens new tokens of every sequence as [num_tiles][2] (sequence, first new
// token), heaviest first: the most KV tiles of block_n keys (context tiles from key 0, then
// new-token tiles from new token 0) under the batch's causal and window rules (none with an
// explicit mask), so that the last wave holds the short ones. prefix_prefill.sm80_mma launches each
// tile for every kv head, the heads fastest (its kv head comes from blockIdx: a loaded one costs it
// registers it does not have).
std::vector<int> prefix_prefill_tile_schedule(const Batch& batch, int tile_tokens, int block_n,
                                              bool explicit_mask);

// prefix_prefill.sm90_wgmma's CTAs in launch order, as [num_ctas][3] (sequence, first new token,
// kv head). Heaviest first by cost class (KV tiles, rounded down to a power of two: the last wave
// holds the short tiles), and within a class kv head by kv head, each head's tiles in
// prefix_prefill_tile_schedule's order: the CTAs running at once then read few key streams (on
// the issue-6 case, H200: 355 us; with the heads fastest 368, with each sequence's tiles under
// one head together, heaviest first within, 366). With thin_rows > 0, the sequences of at most
// thin_rows rows (query_len x GQA group: the decodes of a mixed batch) are taken apart as
// (sequence, kv head) units, heaviest first over all heads, and interleaved with the others in
// proportion to their cost: memory-bound decodes then run beside compute-bound prefill tiles from
// the first wave to the last, rather than the last head's long decodes last (mixed batch: 428
// us against 482 in kv-head rows).
std::vector<int> prefix_prefill_cta_schedule(const Batch& batch, int tile_tokens, int block_n,
                                             int thin_rows);

// minimum_work through the page table: Q and the output, each sequence's visible K and V rows once
// per kv head (in the KV dtype: context and new tokens), the block-table entries of the pages
// holding them, fp8 scales, and the explicit mask's bytes when the batch has one (only the
// variants that read it take such a batch). FLOPs: 4 * head_dim per visible (q head, query, key)
// triple.
Work prefix_prefill_work(const Batch& batch);

}  // namespace attn
