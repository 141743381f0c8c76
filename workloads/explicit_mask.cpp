// The explicit mask type and the kinds generated from the spec: causal written out, speculative
// trees, parallel branches and random grids. The file kind is in explicit_mask_file.cpp.
#include "workloads/explicit_mask.hpp"

#include <algorithm>
#include <numeric>

#include "base/errors.hpp"
#include "workloads/batch.hpp"
#include "workloads/counter_rng.hpp"
#include "workloads/mask_input_file.hpp"

namespace attn {

namespace {

// Counter stream of the random mask kind; apart from the data streams (1, 2, 3) and the page
// shuffle (16), so that the mask is independent of the tensor values and the page order.
constexpr unsigned kRandomMaskStream = 32;

const char* const kAt = "/mask/explicit_mask";

std::string workload_source(const Batch& batch) {
  return "workload \"" + batch.spec.name + "\"";
}

}  // namespace

std::vector<int64_t> explicit_mask_offsets(const Batch& batch) {
  std::vector<int64_t> offsets(size_t(batch.num_seqs) + 1, 0);
  for (size_t s = 0; s < size_t(batch.num_seqs); ++s) {
    const int64_t q = batch.query_lens[s];
    const int64_t kv = batch.kv_lens[s];
    int64_t grid = 0;
    int64_t total = 0;
    if (__builtin_mul_overflow(q, kv, &grid) || __builtin_add_overflow(offsets[s], grid, &total) ||
        total > kMaxExplicitMaskEntries) {
      throw InputError(workload_source(batch),
                       {std::string(kAt) + ": the batch's explicit mask needs more than " +
                        std::to_string(kMaxExplicitMaskEntries) +
                        " entries (the sum of query_len x kv_len over sequences); use shorter "
                        "sequences or a mask rule (causal, sliding_window, block_sparse)"});
    }
    offsets[s + 1] = total;
  }
  return offsets;
}

namespace {

// Row i of sequence s, for writing.
uint8_t* row_of(ExplicitMask& mask, const Batch& batch, size_t s, int64_t i) {
  return mask.bits.data() + mask.offsets[s] + i * batch.kv_lens[s];
}

void fill_causal(ExplicitMask& mask, const Batch& batch) {
  for (size_t s = 0; s < size_t(batch.num_seqs); ++s) {
    for (int64_t i = 0; i < batch.query_lens[s]; ++i) {
      std::fill_n(row_of(mask, batch, s, i), batch.context_lens[s] + i + 1, uint8_t(1));
    }
  }
}

// A speculative-decoding tree: node i's row is its parent's row plus itself, so it sees its
// ancestors among the new tokens and, through the roots, the whole context.
void check_tree(const Batch& batch, const std::vector<int>& parents) {
  ProblemList problems;
  const int64_t nodes = int64_t(parents.size());
  for (int64_t i = 0; i < nodes; ++i) {
    const int parent = parents[size_t(i)];
    if (parent < -1 || parent >= i) {
      problems.add(std::string(kAt) + "/tree_parents/" + std::to_string(i) + ": parent " +
                   std::to_string(parent) + " does not precede node " + std::to_string(i) +
                   " (parents come before their children; -1 attaches a node to the context)");
    }
  }
  for (size_t s = 0; s < size_t(batch.num_seqs); ++s) {
    if (batch.query_lens[s] != nodes) {
      problems.add(std::string(kAt) + "/tree_parents: the tree has " + std::to_string(nodes) +
                   " nodes, but sequence " + std::to_string(s) + " has query_len " +
                   std::to_string(batch.query_lens[s]) + " (a tree needs one node per new token)");
    }
  }
  problems.throw_if_any(workload_source(batch));
}

void fill_tree(ExplicitMask& mask, const Batch& batch, const std::vector<int>& parents) {
  const int64_t nodes = int64_t(parents.size());
  for (size_t s = 0; s < size_t(batch.num_seqs); ++s) {
    const int64_t context = batch.context_lens[s];
    for (int64_t i = 0; i < nodes; ++i) {
      uint8_t* row = row_of(mask, batch, s, i);
      const int parent = parents[size_t(i)];
      if (parent >= 0) {
        std::copy_n(row_of(mask, batch, s, parent), context + nodes, row);
      } else {
        std::fill_n(row, context, uint8_t(1));
      }
      row[context + i] = 1;
    }
  }
}

// `branches` equal runs of new tokens, each causal within itself, all sharing the context: the
// layout of parallel sampling or of several candidate continuations verified in one pass.
void check_branches(const Batch& batch, int branches) {
  ProblemList problems;
  if (branches < 1) {
    problems.add(std::string(kAt) + "/branches: must be at least 1, got " +
                 std::to_string(branches));
    problems.throw_if_any(workload_source(batch));
  }
  for (size_t s = 0; s < size_t(batch.num_seqs); ++s) {
    if (batch.query_lens[s] % branches != 0) {
      problems.add(std::string(kAt) + "/branches: " + std::to_string(branches) +
                   " branches do not divide sequence " + std::to_string(s) + "'s query_len " +
                   std::to_string(batch.query_lens[s]) + " (branches are of equal length)");
    }
  }
  problems.throw_if_any(workload_source(batch));
}

void fill_branches(ExplicitMask& mask, const Batch& batch, int branches) {
  for (size_t s = 0; s < size_t(batch.num_seqs); ++s) {
    const int64_t context = batch.context_lens[s];
    const int64_t branch_len = batch.query_lens[s] / branches;
    for (int64_t i = 0; i < batch.query_lens[s]; ++i) {
      uint8_t* row = row_of(mask, batch, s, i);
      const int64_t branch_start = i - i % branch_len;
      std::fill_n(row, context, uint8_t(1));
      std::fill(row + context + branch_start, row + context + i + 1, uint8_t(1));
    }
  }
}

// Each entry visible with probability `density`, from the counter RNG at the entry's index in
// the batch's grid; the query's own key always, so no row is empty.
void check_density(const Batch& batch, double density) {
  if (!(density >= 0.0 && density <= 1.0)) {
    throw InputError(
        workload_source(batch),
        {std::string(kAt) + "/density: must be in [0, 1], got " + std::to_string(density)});
  }
}

void fill_random(ExplicitMask& mask, const Batch& batch, double density) {
  const unsigned long long key = stream_key(batch.data_seed, kRandomMaskStream);
  for (size_t index = 0; index < mask.bits.size(); ++index) {
    // 53 random bits: a double uniform in [0, 1) with every value exact.
    const double u = double(counter_bits(key, index) >> 11) * 0x1.0p-53;
    mask.bits[index] = u < density ? 1 : 0;
  }
  for (size_t s = 0; s < size_t(batch.num_seqs); ++s) {
    for (int64_t i = 0; i < batch.query_lens[s]; ++i) {
      row_of(mask, batch, s, i)[batch.context_lens[s] + i] = 1;
    }
  }
}

}  // namespace

bool ExplicitMask::visible(const Batch& batch, int seq, int64_t q_index, int64_t key_pos) const {
  const int64_t kv_len = batch.kv_lens[size_t(seq)];
  ATTN_ASSERT(q_index >= 0 && q_index < batch.query_lens[size_t(seq)], "query out of range");
  if (key_pos < 0 || key_pos >= kv_len) return false;
  return bits[size_t(offsets[size_t(seq)] + q_index * kv_len + key_pos)] != 0;
}

int64_t ExplicitMask::row_visible_count(const Batch& batch, int seq, int64_t q_index) const {
  const int64_t kv_len = batch.kv_lens[size_t(seq)];
  ATTN_ASSERT(q_index >= 0 && q_index < batch.query_lens[size_t(seq)], "query out of range");
  const auto begin = bits.begin() + (offsets[size_t(seq)] + q_index * kv_len);
  return std::accumulate(begin, begin + kv_len, int64_t(0));
}

int64_t ExplicitMask::sequence_visible_count(int seq) const {
  return std::accumulate(bits.begin() + offsets[size_t(seq)],
                         bits.begin() + offsets[size_t(seq) + 1], int64_t(0));
}

ExplicitMask build_explicit_mask(const Batch& batch) {
  ATTN_ASSERT(batch.spec.mask.explicit_mask.has_value(), "the spec has no explicit mask");
  const ExplicitMaskSpec& spec = *batch.spec.mask.explicit_mask;
  if (spec.kind == ExplicitMaskKind::file) {
    const std::string& path = spec.resolved_path.empty() ? spec.file : spec.resolved_path;
    return read_explicit_mask_file(batch, path, spec.sha256);
  }
  // Every rule is checked, and the size bounded, before the grid is allocated.
  ExplicitMask mask;
  mask.offsets = explicit_mask_offsets(batch);
  if (spec.kind == ExplicitMaskKind::tree) check_tree(batch, spec.tree_parents);
  if (spec.kind == ExplicitMaskKind::branches) check_branches(batch, spec.branches);
  if (spec.kind == ExplicitMaskKind::random) check_density(batch, spec.density);
  mask.bits.assign(size_t(mask.offsets.back()), 0);
  switch (spec.kind) {
    case ExplicitMaskKind::causal:
      fill_causal(mask, batch);
      break;
    case ExplicitMaskKind::tree:
      fill_tree(mask, batch, spec.tree_parents);
      break;
    case ExplicitMaskKind::branches:
      fill_branches(mask, batch, spec.branches);
      break;
    case ExplicitMaskKind::random:
      fill_random(mask, batch, spec.density);
      break;
    case ExplicitMaskKind::file:
      break;  // handled above
  }
  return mask;
}

}  // namespace attn
