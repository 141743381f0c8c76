// prefix_prefill.sm90_wgmma over an fp8 cache with fp8_dequant=1: the kernel's spare producer warps
// convert the codes each launch reads to 16-bit copies once, and the warp that loads the tiles
// waits for them block by block (sm90_fp8_copies.cuh; the host's plan: sm90_fp8_copies.hpp). Shared
// by the host (which fills it) and the device code.
//
// A block is kBlockKeys keys of one kv head, K's and V's: a context block of a sequence's copy
// tile, or kBlockKeys rows of the gathered new tokens. The copies of the context are tiles of
// tile_n keys, [copy tile][kv head][tile_n][dims] (one TMA box a tile), a sequence's context tiles
// numbered in order; the new tokens' copies have the gathered rows' layout, [new_rows][kv heads]
// [dims]. Each block has one flag, which holds the launch's number + 1 once the block is written.
#pragma once

#include "base/host_device.hpp"
#include "kernels/prefix_prefill/sm80_mma_params.hpp"

namespace attn {

namespace prefix_prefill::sm90_fp8_copies {

constexpr int kBlockKeys = 16;  // keys (or new-token rows) of a block: one flag
// A unit of the plan: the block a converting warp takes at a time.
struct Unit {
  int seq;    // the sequence of a context block; -1 for new-token rows
  int first;  // the block's first context key (of the sequence), or its first new-token row
  int head;   // kv head
  int block;  // context: copy tile x (tile_n / kBlockKeys) + block in it; new tokens: first /
              // kBlockKeys; its flag is flag_index()
};

// The flag of block `block` of kv head `head`: the context's blocks first, then the new tokens'.
ATTN_HOST_DEVICE constexpr long long flag_index(bool context, int block, int head, int kv_heads,
                                                int context_blocks) {
  return ((long long)(context ? block : context_blocks + block)) * kv_heads + head;
}

}  // namespace prefix_prefill::sm90_fp8_copies

struct PrefixPrefillFp8Copies {
  // The fp8 pools (codes) and how a key's row is found: element (page, slot, kv head, dim) at
  // page * page_stride + slot * token_stride + kv head * head_stride + dim (K's strides, then
  // V's), pages through the batch's block table.
  const unsigned char* k_pool;
  const unsigned char* v_pool;
  const int* block_table;  // [num_seqs, max_pages_per_seq]
  int k_strides[3];        // page, token, head
  int v_strides[3];
  int page_size;
  int max_pages_per_seq;
  // The gathered new tokens' codes [new_rows, kv heads, dims] (dims: head_dim, V's v_head_dim).
  const unsigned char* k_new;
  const unsigned char* v_new;
  // The 16-bit copies (the queries' dtype): the context's [copy tiles][kv heads][tile_n][dims] and
  // the new tokens' [new_rows][kv heads][dims].
  unsigned short* k_copies;
  unsigned short* v_copies;
  unsigned short* k_new_copies;
  unsigned short* v_new_copies;
  // The plan: units in the order the warps take them (sm90_fp8_copies.hpp), one flag per block.
  const prefix_prefill::sm90_fp8_copies::Unit* units;
  int unit_count;
  int context_blocks;  // blocks of the context copies (flags of the new tokens follow)
  int* flags;          // zero when allocated
  // Units are handed out from counter (zero when allocated): every launch takes exactly
  // takes_per_launch numbers from it (one per unit, and one past the last unit per converting
  // warp), so number c is unit c % takes_per_launch of launch c / takes_per_launch.
  unsigned long long* counter;
  long long takes_per_launch;
  const PrefixPrefillSeq* seqs;  // [num_seqs] (context lengths)
  int kv_heads;
};

}  // namespace attn
