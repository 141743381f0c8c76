// An explicit attention mask per sequence: a (query_len, kv_len) grid of visible / hidden, row i
// for new token i, column j for key position j. Feeds the masked kernel variants (seed 000's
// explicit mask), e.g. speculative-decoding trees; see docs/workload.md, "Masks".
#pragma once

#include <cstdint>
#include <vector>

namespace attn {

struct Batch;

struct ExplicitMask {
  std::vector<int64_t> offsets;  // [num_seqs + 1]: sequence s's grid starts at bits[offsets[s]]
  std::vector<uint8_t> bits;     // row-major (query_len, kv_len) per sequence, 1 = visible

  bool visible(const Batch& batch, int seq, int64_t q_index, int64_t key_pos) const;
};

// The mask the spec's mask.explicit_mask describes, for the batch's lengths. Deterministic in the
// seed. Throws InputError when it does not fit the lengths (a tree with a different number of
// nodes than query_len, a file row of the wrong width).
ExplicitMask build_explicit_mask(const Batch& batch);

}  // namespace attn
