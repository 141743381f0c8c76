#include "workloads/visibility.hpp"

#include <algorithm>
#include <limits>

#include "base/errors.hpp"

namespace attn {

namespace {

// The causal and window rules each bound the visible keys of a query on one side, so together
// they leave one interval of keys [lo, hi] (never empty: the query's own key is in it).
struct KeyInterval {
  int64_t lo;
  int64_t hi;
};

KeyInterval rule_interval(const Batch& batch, int64_t kv_len, int64_t position) {
  const int64_t hi = batch.causal ? position : kv_len - 1;
  const int64_t lo =
      batch.sliding_window > 0 ? std::max<int64_t>(0, position - batch.sliding_window + 1) : 0;
  return {lo, hi};
}

int64_t overlap(KeyInterval a, int64_t lo, int64_t hi) {
  return std::max<int64_t>(0, std::min(a.hi, hi) - std::max(a.lo, lo) + 1);
}

// sum over p in [0, n) of max(0, p - w + 1): the keys a window of w cuts off the queries before
// position n. The first w positions lose none, position w + k loses k + 1.
int64_t window_cut_before(int64_t n, int64_t w) {
  const int64_t m = std::max<int64_t>(0, n - w);
  return m * (m + 1) / 2;
}

// sum over the queries of one sequence of (hi - lo + 1), in closed form.
int64_t sequence_rule_pairs(const Batch& batch, size_t s) {
  const int64_t c = batch.context_lens[s];
  const int64_t q = batch.query_lens[s];
  const int64_t kv_len = batch.kv_lens[s];
  // Causal: query p sees up to p, the positions c .. c+q-1 summed; otherwise every query up to
  // kv_len - 1.
  const int64_t sum_hi = batch.causal ? q * c + q * (q - 1) / 2 : q * (kv_len - 1);
  const int64_t sum_lo = batch.sliding_window > 0 ? window_cut_before(c + q, batch.sliding_window) -
                                                        window_cut_before(c, batch.sliding_window)
                                                  : 0;
  return sum_hi - sum_lo + q;
}

// Visible pairs of one sequence and one q head under a block-sparse layout. Queries of one block
// row share their kept key blocks, and a kept block is seen whole by every query of the row, or
// by none, unless a rule's edge (the causal diagonal, the window's tail) passes through it; only
// those few blocks are counted query by query.
int64_t block_sparse_pairs(const Batch& batch, size_t s, int head) {
  const BlockSparseLayout& layout = *batch.block_sparse;
  const int64_t bs = layout.block_size;
  const int64_t c = batch.context_lens[s];
  const int64_t kv_len = batch.kv_lens[s];
  if (batch.query_lens[s] == 0) return 0;
  int64_t pairs = 0;
  for (int64_t i = c / bs; i * bs < kv_len; ++i) {
    const int64_t first = std::max(c, i * bs);  // queries of this row: [first, last]
    const int64_t last = std::min(kv_len, (i + 1) * bs) - 1;
    const KeyInterval first_keys = rule_interval(batch, kv_len, first);
    const KeyInterval last_keys = rule_interval(batch, kv_len, last);
    const BlockSparseLayout::Row row = layout.row(head, int(i));
    for (const int32_t* j = row.begin; j != row.end; ++j) {
      const int64_t k_lo = int64_t(*j) * bs;
      const int64_t k_hi = std::min(kv_len, k_lo + bs) - 1;
      if (k_lo > k_hi) continue;  // a kept block past this sequence's end
      // lo and hi only grow with the query position.
      if (first_keys.hi >= k_hi && last_keys.lo <= k_lo) {
        pairs += (last - first + 1) * (k_hi - k_lo + 1);
      } else if (last_keys.hi >= k_lo && first_keys.lo <= k_hi) {
        for (int64_t p = first; p <= last; ++p) {
          pairs += overlap(rule_interval(batch, kv_len, p), k_lo, k_hi);
        }
      }
    }
  }
  return pairs;
}

int64_t saturating_add(int64_t a, int64_t b) {
  int64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<int64_t>::max() : sum;
}

int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? std::numeric_limits<int64_t>::max() : product;
}

}  // namespace

bool key_visible(const Batch& batch, int seq, int q_head, int64_t q_index, int64_t key_pos) {
  const int64_t kv_len = batch.kv_lens[size_t(seq)];
  if (key_pos < 0 || key_pos >= kv_len) return false;
  if (batch.explicit_mask) return batch.explicit_mask->visible(batch, seq, q_index, key_pos);
  const int64_t position = batch.context_lens[size_t(seq)] + q_index;
  if (batch.causal && key_pos > position) return false;
  if (batch.sliding_window > 0 && position - key_pos >= batch.sliding_window) return false;
  if (batch.block_sparse) {
    const int64_t bs = batch.block_sparse->block_size;
    return batch.block_sparse->block_kept(q_head, int(position / bs), int(key_pos / bs));
  }
  return true;
}

int64_t visible_key_count(const Batch& batch, int seq, int q_head, int64_t q_index) {
  if (batch.explicit_mask) return batch.explicit_mask->row_visible_count(batch, seq, q_index);
  const int64_t kv_len = batch.kv_lens[size_t(seq)];
  const int64_t position = batch.context_lens[size_t(seq)] + q_index;
  const KeyInterval keys = rule_interval(batch, kv_len, position);
  if (!batch.block_sparse) return overlap(keys, 0, kv_len - 1);
  const BlockSparseLayout& layout = *batch.block_sparse;
  const int64_t bs = layout.block_size;
  int64_t count = 0;
  const BlockSparseLayout::Row row = layout.row(q_head, int(position / bs));
  for (const int32_t* j = row.begin; j != row.end; ++j) {
    count += overlap(keys, int64_t(*j) * bs, std::min(kv_len, (int64_t(*j) + 1) * bs) - 1);
  }
  return count;
}

std::vector<KeyRange> visible_key_ranges(const Batch& batch, int seq, int kv_head) {
  const size_t s = size_t(seq);
  const int64_t c = batch.context_lens[s], q = batch.query_lens[s], kv_len = batch.kv_lens[s];
  std::vector<KeyRange> out;
  if (q <= 0 || kv_len <= 0) return out;
  // Appends [first, last], joined to the previous range when they touch (callers go in order).
  auto append = [&out](int64_t first, int64_t last) {
    if (!out.empty() && out.back().last + 1 >= first) {
      out.back().last = std::max(out.back().last, last);
    } else {
      out.push_back({first, last});
    }
  };
  if (batch.explicit_mask) {
    const ExplicitMask& mask = *batch.explicit_mask;
    std::vector<uint8_t> seen(size_t(kv_len), 0);
    const uint8_t* grid = mask.bits.data() + mask.offsets[s];
    for (int64_t i = 0; i < q; ++i) {
      const uint8_t* row = grid + i * kv_len;
      for (int64_t k = 0; k < kv_len; ++k) seen[size_t(k)] |= row[k];
    }
    for (int64_t k = 0; k < kv_len; ++k) {
      if (seen[size_t(k)]) append(k, k);
    }
    return out;
  }
  // Without a layout, each query's keys are one interval whose ends only grow with its position,
  // and each interval holds its own query's key, so together they are one interval: the first
  // query's lower end to the last query's upper end (the last key, causal or not).
  if (!batch.block_sparse) {
    append(rule_interval(batch, kv_len, c).lo, kv_len - 1);
    return out;
  }
  // Block-sparse: the queries of block row i together see [lo(first), hi(last)] by the rules, so
  // of a kept key block they see its part inside that interval. That part always ends at the
  // block's last key (a causal query block sees a key block only from the diagonal on, and then
  // past its end), so a block's visible keys are the widest such suffix over the rows and heads
  // that keep it.
  const BlockSparseLayout& layout = *batch.block_sparse;
  const int64_t bs = layout.block_size;
  const int64_t blocks = (kv_len + bs - 1) / bs;
  const int64_t none = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> start(size_t(blocks), none);  // per key block: its first visible key
  const int group = batch.spec.group_size();
  for (int h = kv_head * group; h < (kv_head + 1) * group; ++h) {
    for (int64_t i = c / bs; i < blocks; ++i) {
      const int64_t first = std::max(c, i * bs), last = std::min(kv_len, (i + 1) * bs) - 1;
      const int64_t lo = rule_interval(batch, kv_len, first).lo;
      const int64_t hi = rule_interval(batch, kv_len, last).hi;
      const BlockSparseLayout::Row row = layout.row(h, int(i));
      for (const int32_t* j = row.begin; j != row.end; ++j) {
        if (*j >= blocks) break;  // kept blocks past this sequence's end (columns ascend)
        const int64_t k_lo = int64_t(*j) * bs, k_hi = std::min(kv_len, k_lo + bs) - 1;
        const int64_t a = std::max(k_lo, lo), b = std::min(k_hi, hi);
        if (a > b) continue;
        ATTN_ASSERT(b == k_hi, "a block's visible keys end at its last key");
        start[size_t(*j)] = std::min(start[size_t(*j)], a);
      }
    }
  }
  for (int64_t j = 0; j < blocks; ++j) {
    if (start[size_t(j)] != none) append(start[size_t(j)], std::min(kv_len, (j + 1) * bs) - 1);
  }
  return out;
}

bool key_ranges_depend_on_kv_head(const Batch& batch) {
  return batch.block_sparse.has_value() && !batch.explicit_mask;
}

int64_t visible_pairs(const Batch& batch) {
  const int64_t heads = batch.spec.model.num_q_heads;
  int64_t total = 0;
  for (size_t s = 0; s < size_t(batch.num_seqs); ++s) {
    int64_t pairs = 0;
    if (batch.explicit_mask) {
      // The mask is the same for every head.
      pairs = saturating_mul(batch.explicit_mask->sequence_visible_count(int(s)), heads);
    } else if (batch.block_sparse) {
      for (int h = 0; h < heads; ++h) {
        pairs = saturating_add(pairs, block_sparse_pairs(batch, s, h));
      }
    } else {
      pairs = saturating_mul(sequence_rule_pairs(batch, s), heads);
    }
    total = saturating_add(total, pairs);
  }
  return total;
}

}  // namespace attn
