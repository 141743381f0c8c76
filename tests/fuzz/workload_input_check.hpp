// What the workload loader must do with any input, checked by the libFuzzer target
// (tests/fuzz/workload_loader_fuzz.cpp) and, over the checked-in corpus and every crasher kept
// as a regression, by an ordinary test (tests/workloads/fuzz_corpus_test.cpp):
//   - parse_workload either returns a spec or throws InputError; nothing else escapes;
//   - a spec it returns passes validate_workload (parser and validator agree);
//   - its canonical form parses back to the same canonical form;
//   - a small enough spec generates a batch whose sizes are the ones the limits were checked on
//     (workload_totals), with every page index inside the pool.
// Relative file references resolve against a folder that does not exist; absolute ones are read
// (bounded, read-only). Nothing is written.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "base/errors.hpp"
#include "workloads/batch.hpp"
#include "workloads/workload_spec.hpp"
#include "workloads/workload_validation.hpp"

namespace attn::fuzz {

// A broken promise of the loader (not a rejected input).
class PropertyViolation : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

inline constexpr const char* kNoBaseDir = "/nonexistent-attn-fuzz-dir";

inline void check_workload_input(std::string_view text) {
  WorkloadSpec spec;
  try {
    spec = parse_workload(text, "fuzz", kNoBaseDir);
  } catch (const InputError&) {
    return;  // refused with its problems: what bad input should get
  }
  const std::vector<std::string> problems = validate_workload(spec);
  if (!problems.empty()) {
    throw PropertyViolation("the parser accepted a spec the validator refuses: " + problems[0]);
  }
  const std::string canonical = canonical_json(spec);
  WorkloadSpec again;
  try {
    again = parse_workload(canonical, "canonical", kNoBaseDir);
  } catch (const InputError& e) {
    throw PropertyViolation(std::string("the canonical form does not parse: ") + e.what() + "\n" +
                            canonical);
  }
  if (canonical_json(again) != canonical) {
    throw PropertyViolation("the canonical form is not a fixed point:\n" + canonical + "\n" +
                            canonical_json(again));
  }

  // Generation allocates per sequence, token, page and mask cell: only small batches here.
  const WorkloadTotals totals = workload_totals(spec);
  constexpr int64_t kSmall = int64_t(1) << 16;
  if (totals.num_seqs > 4096 || totals.total_kv > kSmall || totals.num_pages > kSmall ||
      totals.block_table_entries > kSmall || totals.total_q > kSmall ||
      totals.total_q * totals.total_kv > (int64_t(1) << 24)) {
    return;
  }
  Batch batch;
  try {
    batch = generate_batch(spec);
  } catch (const InputError&) {
    return;  // a mask that does not fit the lengths is found at generation
  }
  if (batch.num_seqs != totals.num_seqs || batch.total_kv != totals.total_kv ||
      batch.total_q != totals.total_q || batch.num_pages != totals.num_pages) {
    throw PropertyViolation("the batch's sizes differ from the totals the limits checked");
  }
  for (int32_t page : padded_block_table(batch)) {
    if (page < 0 || page >= batch.num_pages) {
      throw PropertyViolation("a block table entry is outside the pool: " + std::to_string(page));
    }
  }
}

}  // namespace attn::fuzz
