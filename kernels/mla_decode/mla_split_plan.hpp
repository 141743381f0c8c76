// How mla_decode's GPU variants deal a batch's keys to CTAs: each sequence's visible keys in
// blocks of block_tokens, cut into splits of whole blocks so that the CTAs of one launch (splits x
// row tiles of every sequence) fill the GPU about once with equal shares. Plain host code, tested
// on the CPU; the launch records its description.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attn {

struct MlaSplitInputs {
  int block_tokens = 64;
  int fixed_splits = 0;  // > 0: this many splits per sequence (fewer where it has fewer blocks)
  int sm_count = 132;
  int resident_per_sm = 1;  // CTAs of the kernel one SM holds
  int max_splits = 64;
};

struct MlaSplitPlan {
  // [ctas][5]: sequence, split, the sequence's splits, first key, end key (keys of a split are
  // whole blocks from key 0; the last split of a sequence ends at kv_len).
  std::vector<int32_t> work;
  std::vector<int32_t> seq_partial;  // [num_seqs] first partial slot (sequences with > 1 split)
  int partial_slots = 0;             // slots of the partial buffers
  int max_splits_used = 1;
  std::string description;
  int ctas() const { return int(work.size() / 5); }
};

// kv_lens[s]: keys of sequence s; row_tiles[s]: its row tiles (query tokens x q heads / rows per
// CTA), which multiply its work.
MlaSplitPlan plan_mla_splits(const std::vector<int64_t>& kv_lens, const std::vector<int>& row_tiles,
                             const MlaSplitInputs& inputs);

}  // namespace attn
