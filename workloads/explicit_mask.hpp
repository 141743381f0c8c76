// An explicit attention mask per sequence: a (query_len, kv_len) grid of visible / hidden, row i
// for new token i, column j for key position j. Feeds the masked kernel variants (seed 000's
// explicit mask), e.g. speculative-decoding trees; docs/masks.md describes the kinds and the file
// format.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attn {

struct Batch;
struct SequenceLengths;

struct ExplicitMask {
  std::vector<int64_t> offsets;  // [num_seqs + 1]: sequence s's grid starts at bits[offsets[s]]
  std::vector<uint8_t> bits;     // row-major (query_len, kv_len) per sequence, 1 = visible

  bool visible(const Batch& batch, int seq, int64_t q_index, int64_t key_pos) const;
  // Visible keys of one query row; of the whole grid of one sequence.
  int64_t row_visible_count(const Batch& batch, int seq, int64_t q_index) const;
  int64_t sequence_visible_count(int seq) const;
};

// The most grid entries (one byte each) an explicit mask may hold over the whole batch: 2 GiB,
// and within reach of the 32-bit offsets a kernel may index the mask tensor with. Checked before
// anything is allocated.
inline constexpr int64_t kMaxExplicitMaskEntries = int64_t(1) << 31;

// The mask the spec's mask.explicit_mask describes, for the batch's lengths (context_lens,
// query_lens, kv_lens). Deterministic in the seed. Throws InputError when it does not fit the
// lengths (a tree with a different number of nodes than query_len, branches that do not divide
// query_len, a file row of the wrong width) or when the grid is over kMaxExplicitMaskEntries.
ExplicitMask build_explicit_mask(const Batch& batch);

// Where each sequence's grid starts: prefix sums of query_len * kv_len, [num_seqs + 1]. Throws
// InputError when the total is over kMaxExplicitMaskEntries.
std::vector<int64_t> explicit_mask_offsets(const Batch& batch);

// The file kind's check without the grid: reads the file and checks it against the sequences'
// lengths (in batch order), as read_explicit_mask_file does. Throws InputError as it does.
void check_explicit_mask_file(const std::vector<SequenceLengths>& lengths, const std::string& path,
                              const std::string& expected_sha256);

// The file kind's reader (format in docs/masks.md): the grid for the batch's lengths, from one
// entry per sequence or a single entry for sequences of one shape. `expected_sha256` as in
// read_mask_json_file. The offsets are the batch's (query_len * kv_len prefix sums).
ExplicitMask read_explicit_mask_file(const Batch& batch, const std::string& path,
                                     const std::string& expected_sha256);

}  // namespace attn
