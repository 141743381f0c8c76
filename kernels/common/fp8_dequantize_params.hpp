// Kernel parameters of the pass that dequantises an fp8 cache's codes before a Hopper kernel reads
// them as 16-bit tiles (fp8_dequantize.cuh): prefix_prefill.sm90_wgmma's context pages and new
// tokens (its config fp8_dequant=1), flash_fwd.sm90_wgmma's gathered K and V (as "new tokens", no
// pages). Shared by the host (which fills them) and the device code.
#pragma once

#include "base/host_device.hpp"

namespace attn {

struct Fp8DequantParams {
  // CTA e < pages converts context page e: the pool's page block_table[entries[e]], K's
  // k_page_bytes codes and V's v_page_bytes, into page e of k_out and v_out (the pool's layout
  // within a page, 16-bit values). The entries (sequence * max_pages_per_seq + page index, each
  // sequence's context pages in order) follow from the lengths alone; the page numbers are read
  // from the block table here, on every launch.
  const unsigned char* k_pool;
  const unsigned char* v_pool;
  const int* block_table;  // [num_seqs, max_pages_per_seq]
  const int* entries;      // [pages]
  int pages;
  long long k_page_bytes;  // page_size * num_kv_heads * head_dim (v_head_dim for V)
  long long v_page_bytes;
  unsigned short* k_out;  // [pages, page_size * num_kv_heads * head_dim]
  unsigned short* v_out;
  // CTA pages + c converts bytes [c * kChunkBytes, (c + 1) * kChunkBytes) of the contiguous codes
  // (prefix prefill's gathered new tokens, flash_fwd's gathered K and V: k_new_bytes and
  // v_new_bytes) into k_new_out and v_new_out.
  const unsigned char* k_new;
  const unsigned char* v_new;
  long long k_new_bytes;
  long long v_new_bytes;
  unsigned short* k_new_out;
  unsigned short* v_new_out;
};

namespace fp8_dequantize {

constexpr int kThreads = 256;
constexpr long long kChunkBytes = 16384;  // new tokens' codes per CTA

// CTAs of the pass: one per context page, then one per chunk of the wider of K_new and V_new.
ATTN_HOST_DEVICE constexpr long long ctas(long long pages, long long k_new_bytes,
                                          long long v_new_bytes) {
  const long long widest = k_new_bytes > v_new_bytes ? k_new_bytes : v_new_bytes;
  return pages + (widest + kChunkBytes - 1) / kChunkBytes;
}

}  // namespace fp8_dequantize

}  // namespace attn
