// Whole-batch limits: a workload too large to generate is refused before anything is allocated.
// This file replaces the global operator new (for this test binary) to prove the "before".
#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include <gtest/gtest.h>

#include "base/errors.hpp"
#include "tests/workloads/test_util.hpp"
#include "workloads/batch.hpp"
#include "workloads/workload_validation.hpp"

namespace {
std::atomic<bool> g_tracking{false};
std::atomic<size_t> g_largest_allocation{0};
}  // namespace

// malloc/free behind operator new/delete is the replacement the standard allows; GCC cannot see
// that both halves are replaced together.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t size) {
  if (g_tracking.load(std::memory_order_relaxed)) {
    size_t seen = g_largest_allocation.load(std::memory_order_relaxed);
    while (size > seen && !g_largest_allocation.compare_exchange_weak(seen, size)) {
    }
  }
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}

namespace attn {
namespace {

using nlohmann::json;
using test::problems_of;

// Records the largest single allocation made while it is alive.
class AllocationWatch {
 public:
  AllocationWatch() {
    g_largest_allocation = 0;
    g_tracking = true;
  }
  ~AllocationWatch() { g_tracking = false; }
  size_t largest() const { return g_largest_allocation.load(); }
};

constexpr size_t kSmallAllocation = size_t(1) << 20;

json small_model_workload(int page_size) {
  json doc = test::valid_workload_json();
  doc["model"] = {{"num_q_heads", 1}, {"num_kv_heads", 1}, {"head_dim", 64}, {"dtype", "bf16"}};
  doc["kv_cache"]["page_size"] = page_size;
  return doc;
}

TEST(WorkloadLimits, TwoToThe31TokensAreRejectedWithoutAllocating) {
  json doc = test::valid_workload_json();
  doc["sequences"] = json::parse(R"([{"context_len": 4095, "query_len": 1, "count": 524288}])");
  std::vector<std::string> problems;
  size_t largest = 0;
  {
    AllocationWatch watch;
    problems = problems_of(doc);
    largest = watch.largest();
  }
  EXPECT_PROBLEM(problems, "/sequences: the total of kv tokens",
                 "is 2147483648; the limit is < 2^31 (2147483648)");
  EXPECT_LT(largest, kSmallAllocation);

  // One token fewer passes the token limit (and this small model stays under the byte limits).
  doc["sequences"] = json::parse(R"([{"context_len": 2147483646, "query_len": 1}])");
  problems = problems_of(doc);
  EXPECT_FALSE(test::has_problem(problems, {"kv tokens"})) << test::joined(problems);
}

TEST(WorkloadLimits, QueryTokens) {
  json doc = small_model_workload(256);
  doc["sequences"] = json::parse(R"([{"context_len": 0, "query_len": 2147483648}])");
  auto problems = problems_of(doc);
  EXPECT_PROBLEM(problems, "the total of query tokens (sum of count * query_len) is 2147483648");
}

TEST(WorkloadLimits, TotalSequences) {
  json doc = small_model_workload(16);
  doc["sequences"] =
      json::parse(R"([{"context_len": 0, "count": 1048576}, {"context_len": 0, "count": 1}])");
  auto problems = problems_of(doc);
  ASSERT_EQ(problems.size(), 1u) << test::joined(problems);
  EXPECT_EQ(problems[0],
            "/sequences: the number of sequences (sum of count) is 1048577; the limit is 1048576 "
            "(2^20)");
  doc["sequences"].erase(1);
  EXPECT_TRUE(problems_of(doc).empty());
}

TEST(WorkloadLimits, Pages) {
  // 2^31 - 1 tokens in 1-token pages: 2^31 pages with the poison page.
  json doc = small_model_workload(1);
  doc["sequences"] = json::parse(R"([{"context_len": 2147483646, "query_len": 1}])");
  auto problems = problems_of(doc);
  EXPECT_PROBLEM(problems, "the number of pages", "is 2147483648; the limit is < 2^31");
}

TEST(WorkloadLimits, KvPoolBytesAtTheBoundary) {
  // 1 kv head of 64 bf16 dims in 1-token pages: 256 bytes of K+V per page. 2^28 pages are 64 GiB.
  json doc = small_model_workload(1);
  doc["sequences"] = json::parse(R"([{"context_len": 268435454, "query_len": 1}])");
  EXPECT_TRUE(problems_of(doc).empty()) << test::joined(problems_of(doc));
  doc["sequences"][0]["context_len"] = 268435455;
  auto problems = problems_of(doc);
  ASSERT_EQ(problems.size(), 1u) << test::joined(problems);
  EXPECT_EQ(problems[0],
            "/sequences: the K+V pool size in bytes (2 * 268435457 pages * 1 tokens * 1 kv heads * "
            "64 dims * 2 bytes) is 68719476992; the limit is 64 GiB (68719476736)");
}

TEST(WorkloadLimits, QueryBytesAtTheBoundary) {
  // 256 q heads of 256 fp16 dims: 128 KiB per query token; 2^17 tokens are 16 GiB.
  json doc = test::valid_workload_json();
  doc["model"] = {{"num_q_heads", 256}, {"num_kv_heads", 1}, {"head_dim", 256}, {"dtype", "fp16"}};
  doc["sequences"] = json::parse(R"([{"context_len": 0, "query_len": 131072}])");
  EXPECT_TRUE(problems_of(doc).empty()) << test::joined(problems_of(doc));
  doc["sequences"][0]["query_len"] = 131073;
  auto problems = problems_of(doc);
  ASSERT_EQ(problems.size(), 1u) << test::joined(problems);
  EXPECT_PROBLEM(problems, "the Q size in bytes", "is 17180000256; the limit is 16 GiB");
}

TEST(WorkloadLimits, PaddedBlockTable) {
  // Many one-page sequences beside one long one: the padded table would hold 2^31 entries.
  json doc = small_model_workload(1);
  doc["sequences"] = json::parse(
      R"([{"context_len": 2047, "query_len": 1}, {"context_len": 0, "count": 1048575}])");
  auto problems = problems_of(doc);
  ASSERT_EQ(problems.size(), 1u) << test::joined(problems);
  EXPECT_PROBLEM(problems, "the padded block table", "1048576 * 2048", "is 2147483648");
}

TEST(WorkloadLimits, AbsurdLengthsSaturateInsteadOfOverflowing) {
  json doc = test::valid_workload_json();
  doc["sequences"] = json::parse(
      R"([{"context_len": 9223372036854775807, "query_len": 9223372036854775807,
           "count": 1048576}])");
  auto problems = problems_of(doc);
  EXPECT_PROBLEM(problems, "the total of kv tokens", "is at least 9223372036854775807");
  EXPECT_PROBLEM(problems, "the K+V pool size in bytes");
}

TEST(WorkloadLimits, GenerateBatchRefusesAnOversizedSpecWithoutAllocating) {
  WorkloadSpec spec = parse_workload(test::valid_workload_json().dump(), "t");
  spec.sequences = {{1 << 30, 1, 1 << 20}};
  size_t largest = 0;
  try {
    AllocationWatch watch;
    generate_batch(spec);
    largest = watch.largest();
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    largest = g_largest_allocation.load();
    EXPECT_EQ(e.source(), "workload \"unit\"");
    EXPECT_PROBLEM(e.problems(), "the total of kv tokens");
  }
  EXPECT_LT(largest, kSmallAllocation);
}

TEST(WorkloadLimits, TotalsAreComputedFromTheSpec) {
  WorkloadSpec spec = parse_workload(test::valid_workload_json().dump(), "t");
  spec.sequences = {{40, 1, 3}, {0, 5, 2}, {15, 1, 1}};
  WorkloadTotals t = workload_totals(spec);
  EXPECT_EQ(t.num_seqs, 6);
  EXPECT_EQ(t.total_kv, 3 * 41 + 2 * 5 + 16);
  EXPECT_EQ(t.total_q, 3 + 10 + 1);
  EXPECT_EQ(t.used_pages, 3 * 3 + 2 * 1 + 1);
  EXPECT_EQ(t.num_pages, 13);
  EXPECT_EQ(t.max_pages_per_seq, 3);
  EXPECT_EQ(t.block_table_entries, 18);
  EXPECT_EQ(t.kv_pool_bytes, 2 * 13 * 16 * 2 * 64 * 2);
  EXPECT_EQ(t.query_bytes, 14 * 8 * 64 * 2);
}

}  // namespace
}  // namespace attn
