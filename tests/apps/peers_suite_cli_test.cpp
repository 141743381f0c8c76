// `attn-bench peers --suite` through the real binary with the CPU test peers: every workload runs
// ours and the peers as `peers WORKLOAD` does, each in a run of its own, and the combined table
// at the end has one row per workload whose numbers are those of the workload's own table and of
// the database; a workload whose peers all fail does not stop the suite; misuse and bad suites
// are refused before any work with the documented exit codes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "results/store.hpp"
#include "results/table.hpp"
#include "tests/apps/cli_runner.hpp"
#include "tests/apps/tiny_suite_workloads.hpp"

namespace attn {
namespace {

using testing::CliResult;

// The whitespace-separated words of a table row.
std::vector<std::string> peers_suite_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// The first line of `text` at or after `from` that starts with `start`; "" when there is none.
std::string peers_suite_line(const std::string& text, const std::string& start, size_t from = 0) {
  size_t at = text.compare(from, start.size(), start) == 0 ? from : text.find("\n" + start, from);
  if (at == std::string::npos) return "";
  if (text[at] == '\n') ++at;
  return text.substr(at, text.find('\n', at) - at);
}

class PeersSuiteCli : public testing::Cli {
 protected:
  // The runner adds its CPU test peers (peer.test.*) with this set.
  void SetUp() override {
    Cli::SetUp();
    ::setenv("ATTN_PEERS_TEST_PEERS", "1", 1);
  }
  void TearDown() override {
    ::unsetenv("ATTN_PEERS_TEST_PEERS");
    Cli::TearDown();
  }

  // Three tiny batches: two decode (so paged_decode runs them) and one prefill (prefix_prefill).
  std::string three_workloads() {
    return write("three.json", std::string(R"({"schema_version": 1, "name": "three",
      "description": "three tiny batches", "workloads": [)") +
                                   testing::kTinyDecodeWorkloads + R"(,
        {"schema_version": 2, "name": "tiny-c", "model": {"num_q_heads": 4, "num_kv_heads": 4,
         "head_dim": 64, "dtype": "bf16"}, "kv_cache": {"page_size": 16},
         "sequences": [{"context_len": 40, "query_len": 4, "count": 2}], "seed": 1}]})")
        .string();
  }

  CliResult peers_suite(const std::string& peers) {
    return run({"peers", "--suite", three_workloads(), "--cpu", "--policy", "screen", "--peers",
                peers, "--python", ATTN_PEERS_TEST_PYTHON, "--db", db()});
  }

  // Each workload's measurements in the database by variant, from the runs of `attn-bench peers`.
  std::map<std::string, std::map<std::string, Measurement>> recorded() const {
    Store store(db(), StoreAccess::read_only);
    std::map<std::string, std::map<std::string, Measurement>> by_workload;
    for (const StoredMeasurement& m : store.find_measurements({})) {
      by_workload[store.workload(m.workload_id)->name][m.measurement.variant] = m.measurement;
    }
    return by_workload;
  }

  std::string db() const { return (dir_ / "peers.db").string(); }
};

TEST_F(PeersSuiteCli, OneRowPerWorkloadWithTheNumbersOfItsOwnTableAndOfTheDatabase) {
  const CliResult r = peers_suite("peer.test.*");
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;  // peer.test.wrong is incorrect everywhere
  EXPECT_NE(r.err.find("attn-bench: suite three: workload 3 of 3"), std::string::npos) << r.err;
  const size_t table = r.out.find("suite     three: ours and the peers, one row per workload");
  ASSERT_NE(table, std::string::npos) << r.out;
  const std::vector<std::string> header =
      peers_suite_words(peers_suite_line(r.out, "workload ", table));
  EXPECT_EQ(header, (std::vector<std::string>{"workload", "ours", "ours_us", "peer.test.reference",
                                              "peer.test.wrong", "fastest", "peer", "peer/ours"}));

  Store store(db(), StoreAccess::read_only);
  ASSERT_EQ(store.runs().size(), 3u) << "one run per workload";
  for (const StoredRun& run : store.runs()) EXPECT_EQ(run.record.tool, "attn-bench peers");
  const auto in_db = recorded();
  // Our fastest passed variant of each workload, by the database: on the prefill batch (tiny-c)
  // two of ours run (prefix_prefill and flash_fwd), and either may be the faster.
  std::map<std::string, std::string> ours_of;
  for (const auto& [workload, variants] : in_db) {
    const Measurement* best = nullptr;
    for (const auto& [variant, m] : variants) {
      if (variant.rfind("peer.", 0) != 0 && m.disposition == Disposition::passed &&
          (!best || m.stats.median < best->stats.median)) {
        best = &m;
        ours_of[workload] = variant;
      }
    }
  }
  EXPECT_EQ(ours_of.size(), 3u);
  EXPECT_EQ(ours_of["tiny-a"], "paged_decode.cpu_reference");
  for (const auto& [workload, ours] : ours_of) {
    SCOPED_TRACE(workload);
    // The workload's own table, printed as it ended.
    const size_t own = r.out.find("workload  " + workload + " (");
    ASSERT_NE(own, std::string::npos) << r.out;
    ASSERT_LT(own, table);
    const std::vector<std::string> our_row =
        peers_suite_words(peers_suite_line(r.out, ours + " ", own));
    const std::vector<std::string> peer_row =
        peers_suite_words(peers_suite_line(r.out, "peer.test.reference ", own));
    ASSERT_GE(our_row.size(), 4u);
    ASSERT_GE(peer_row.size(), 4u);
    // The combined row.
    const std::vector<std::string> row =
        peers_suite_words(peers_suite_line(r.out, workload + " ", table));
    ASSERT_EQ(row.size(), 8u) << r.out.substr(table);
    EXPECT_EQ(row[1], ours);
    EXPECT_EQ(row[2], our_row[3]) << "our median as in the workload's table";
    EXPECT_EQ(row[3], peer_row[3]) << "the peer's median as in the workload's table";
    EXPECT_EQ(row[4], "incorrect");
    EXPECT_EQ(row[5], "peer.test.reference");
    // The database holds the same measurements, and the ratio is of its medians.
    ASSERT_EQ(in_db.count(workload), 1u);
    const auto& variants = in_db.at(workload);
    ASSERT_EQ(variants.count(ours), 1u);
    ASSERT_EQ(variants.count("peer.test.reference"), 1u);
    ASSERT_EQ(variants.count("peer.test.wrong"), 1u);
    const Measurement& our = variants.at(ours);
    const Measurement& peer = variants.at("peer.test.reference");
    EXPECT_EQ(our.disposition, Disposition::passed);
    EXPECT_EQ(peer.disposition, Disposition::passed);
    EXPECT_EQ(variants.at("peer.test.wrong").disposition, Disposition::incorrect);
    EXPECT_GE(our.samples_us.size(), 1u);
    EXPECT_GE(peer.samples_us.size(), 1u);
    EXPECT_EQ(row[2], format("%.2f", our.stats.median));
    EXPECT_EQ(row[3], format("%.2f", peer.stats.median));
    EXPECT_EQ(row[6], format("%.3gx", peer.stats.median / our.stats.median));
    EXPECT_TRUE(row[7] == "FASTER" || row[7] == "SLOWER" || row[7] == "SAME") << row[7];
  }
  EXPECT_NE(r.out.find("suite     three: 3 of 3 workloads with a passing variant of ours, 3 with "
                       "a passing peer"),
            std::string::npos)
      << r.out;
}

TEST_F(PeersSuiteCli, AWorkloadWhosePeersAllFailDoesNotStopTheSuite) {
  const CliResult r = peers_suite("peer.test.wrong");
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  const size_t table = r.out.find("suite     three: ours and the peers");
  ASSERT_NE(table, std::string::npos) << r.out;
  for (const std::string workload : {"tiny-a", "tiny-b", "tiny-c"}) {
    const std::vector<std::string> row =
        peers_suite_words(peers_suite_line(r.out, workload + " ", table));
    ASSERT_EQ(row.size(), 6u) << r.out.substr(table);
    EXPECT_EQ(row[3], "incorrect") << workload;
    EXPECT_EQ(row[4], "-") << "no fastest peer: " << workload;
    EXPECT_EQ(row[5], "-") << "no ratio: " << workload;
  }
  EXPECT_NE(r.out.find("3 of 3 workloads with a passing variant of ours, 0 with a passing peer"),
            std::string::npos)
      << r.out;
  const auto in_db = recorded();
  ASSERT_EQ(in_db.size(), 3u);
  for (const auto& [workload, variants] : in_db) {
    ASSERT_EQ(variants.count("peer.test.wrong"), 1u) << workload;
    EXPECT_EQ(variants.at("peer.test.wrong").disposition, Disposition::incorrect) << workload;
  }
}

TEST_F(PeersSuiteCli, MisuseAndBadSuitesAreRefusedBeforeAnyWork) {
  CliResult r = run({"peers", "default", "--suite", three_workloads(), "--cpu", "--db", db()});
  EXPECT_EQ(r.exit_code, testing::kUsage) << r.err;
  EXPECT_NE(r.err.find("--suite runs the suite's workloads: give no workload with it"),
            std::string::npos)
      << r.err;
  r = run({"peers", "--suite", "no-such-suite", "--cpu", "--db", db()});
  EXPECT_EQ(r.exit_code, testing::kUsage) << r.err;
  EXPECT_NE(r.err.find("'no-such-suite'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("built-in suites: decode-shapes"), std::string::npos) << r.err;
  const std::string bad = write("bad.json", R"({"schema_version": 1, "name": "bad",
    "workloads": ["default", {"name": "x"}]})")
                              .string();
  r = run({"peers", "--suite", bad, "--cpu", "--db", db()});
  EXPECT_EQ(r.exit_code, testing::kInvalidInput) << r.err;
  EXPECT_NE(r.err.find("/workloads/1"), std::string::npos) << r.err;
  // Every workload is checked against the host-memory budget before the first runs, and before
  // the GPU is looked for (no --cpu here): the second holds about 1 GiB of K and V.
  const std::string big = write("big.json", R"({"schema_version": 1, "name": "big",
    "workloads": ["default",
      {"schema_version": 2, "name": "wide", "model": {"num_q_heads": 32, "num_kv_heads": 8,
       "head_dim": 128, "dtype": "bf16"}, "kv_cache": {"page_size": 16},
       "sequences": [{"context_len": 4096, "query_len": 1, "count": 64}], "seed": 1}]})")
                              .string();
  r = run({"peers", "--suite", big, "--max-host-memory", "256MiB", "--db", db()});
  EXPECT_EQ(r.exit_code, testing::kInvalidInput) << r.err;
  EXPECT_NE(r.err.find("workload wide"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--max-host-memory"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("workload  default"), std::string::npos) << "nothing ran: " << r.out;
  EXPECT_FALSE(std::filesystem::exists(db())) << "nothing is written before the checks";
}

}  // namespace
}  // namespace attn
