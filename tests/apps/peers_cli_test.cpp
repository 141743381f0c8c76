// `attn-bench peers` and `attn-bench peers import` through the real binary: bad input and a
// missing GPU end with their documented exit codes before any GPU work; a results file is checked
// line by line and its verdicts are attn-bench's own; imported peers land on the workload and
// device rows `attn-bench run` writes, and `attn-tune export` never exports them. The Python
// runner's own tests (tools/peers/tests) run the whole pipeline with the CPU test peers.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "kernels/device/cuda_context.hpp"
#include "results/store.hpp"
#include "tests/apps/cli_runner.hpp"

namespace attn {
namespace {

using testing::Cli;
using testing::slurp;

class PeersCli : public Cli {
 protected:
  // A results file for `workload` (a preset), as the runner writes one for the CPU test peers;
  // `rows` are the peer lines.
  std::filesystem::path results_file(const std::vector<nlohmann::json>& rows,
                                     const std::string& workload = "default") {
    const auto dump = run({"workload", "dump", workload, "--out", (dir_ / "dump").string(),
                           "--no-reference"});
    EXPECT_EQ(dump.exit_code, 0) << dump.err;
    const nlohmann::json index = nlohmann::json::parse(slurp(dir_ / "dump" / "batch.json"));
    nlohmann::json header = {{"kind", "header"},
                             {"format", "attn-bench peer results"},
                             {"format_version", 1},
                             {"spec_hash", index["spec_hash"]},
                             {"spec", index["spec"]},
                             {"workload", index["spec"]["name"]},
                             {"dump", (dir_ / "dump").string()},
                             {"output_dtype", "bf16"},
                             {"tolerance", 5e-3},
                             {"reference", "cpu_reference"},
                             {"policy",
                              {{"name", "screen"},
                               {"min_samples", 3},
                               {"max_samples", 100},
                               {"noise", 0.03},
                               {"max_seconds", 1.0},
                               {"warmup_min", 1},
                               {"warmup_window", 1},
                               {"warmup_tolerance", 0.05},
                               {"warmup_max_seconds", 0.1},
                               {"flush_l2", true}}},
                             {"device", {{"kind", "cpu"}}},
                             {"runner", {{"python", "3"}}}};
    std::string text = header.dump() + "\n";
    for (const auto& row : rows) text += row.dump() + "\n";
    return write("results.jsonl", text);
  }

  static nlohmann::json peer(const std::string& name, const std::string& disposition,
                             double rel_l2, bool timed) {
    nlohmann::json row = {{"kind", "peer"},
                          {"variant", name},
                          {"library", "test"},
                          {"disposition", disposition},
                          {"reason", disposition == "unsupported" ? "no GPU here" : ""},
                          {"config", {{"library", "numpy"}}},
                          {"verification", nullptr},
                          {"timing", nullptr}};
    if (disposition != "unsupported") {
      row["verification"] = {{"checked", true},     {"max_abs_error", 0.01},
                             {"rel_l2_error", rel_l2}, {"nonfinite", 0},
                             {"elements", 32768},   {"tolerance", 5e-3},
                             {"reference", "cpu_reference"}};
    }
    if (timed) {
      row["timing"] = {{"timer", "cpu"},
                       {"samples_us", {12.0, 11.0, 13.0, 12.5, 11.5}},
                       {"warmup_samples", 2},
                       {"stop_reason", "noise"},
                       {"noise", 0.01}};
    }
    return row;
  }

  std::string db() const { return (dir_ / "peers.db").string(); }
};

TEST_F(PeersCli, WithoutAGpuPeersExitsWithTheEnvironmentCode) {
  if (!discover_devices().devices.empty()) GTEST_SKIP() << "needs a machine without a GPU";
  const auto r = run({"peers", "default", "--db", db()});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("attn-bench peers needs a GPU"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--cpu"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(db())) << "nothing is written before the checks";
}

TEST_F(PeersCli, BadInputIsRefusedBeforeAnything) {
  auto r = run({"peers", "no-such-workload", "--db", db()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  r = run({"peers", "--db", db()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("name a workload"), std::string::npos) << r.err;
  r = run({"peers", "default", "--policy", "thorough", "--cpu"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = run({"peers", "default", "--variant", "nothing.*", "--cpu"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = run({"peers", "default", "--runner", (dir_ / "nowhere").string(), "--cpu"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("run_peers.py"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(db()));
}

TEST_F(PeersCli, AnInterpreterThatCannotRunTheRunnerIsAnEnvironmentError) {
  auto r = run({"peers", "default", "--cpu", "--python", (dir_ / "no-python").string(),
                "--db", db()});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("cannot start"), std::string::npos) << r.err;
  // /bin/false starts but is no Python: the runner's --list fails.
  r = run({"peers", "default", "--cpu", "--python", "/bin/false", "--db", db()});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("does not start"), std::string::npos) << r.err;
}

TEST_F(PeersCli, UnknownPeerGlobIsAUsageError) {
  const auto r = run({"peers", "default", "--cpu", "--python", ATTN_PEERS_TEST_PYTHON, "--peers",
                      "peer.cutlass.*", "--db", db()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("matches no peer"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("peer.torch.sdpa_flash"), std::string::npos) << r.err;
}

TEST_F(PeersCli, ImportOfAMissingOrMalformedFileExitsWithThree) {
  auto r = run({"peers", "import", (dir_ / "missing.jsonl").string(), "--db", db()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  r = run({"peers", "import", write("empty.jsonl", "").string(), "--db", db()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const auto good = results_file({peer("peer.test.reference", "passed", 2e-3, true)});
  const std::string text = slurp(good);
  r = run({"peers", "import", write("broken.jsonl", text + "{\"kind\": \"peer\", \n").string(),
           "--db", db()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("line 3"), std::string::npos) << r.err;
  nlohmann::json row = peer("peer.test.reference", "passed", 2e-3, true);
  row["timing"]["samples_us"] = {1.0, -2.0};
  r = run({"peers", "import", results_file({row}).string(), "--db", db()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("/timing/samples_us/1"), std::string::npos) << r.err;
  r = run({"peers", "import",
           results_file({peer("sdpa_flash", "passed", 2e-3, true),
                         peer("peer.test.x", "finished", 0, false)})
               .string(),
           "--db", db()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("is not a peer name"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is not a disposition"), std::string::npos) << r.err;
  r = run({"peers", "import",
           results_file({peer("peer.test.a", "passed", 2e-3, false)}).string(), "--db", db()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("a passed peer needs its timing"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(db())) << "a refused file opens no database";
}

TEST_F(PeersCli, ASpecChangedAfterTheDumpIsRefused) {
  const auto path = results_file({peer("peer.test.reference", "passed", 2e-3, true)});
  std::string text = slurp(path);
  const auto at = text.find("\"seed\":");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 7, "\"seed\": 1,\"x\":");  // still JSON, another spec
  const auto r = run({"peers", "import", write("changed.jsonl", text).string(), "--db", db()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("hashes to"), std::string::npos) << r.err;
}

TEST_F(PeersCli, ImportRecordsPeersWithOurVerdict) {
  // peer.test.liar says passed with an error 100 times the tolerance: attn-bench checks again.
  const auto path = results_file({peer("peer.test.reference", "passed", 2e-3, true),
                                  peer("peer.test.liar", "passed", 0.5, true),
                                  peer("peer.test.wrong", "incorrect", 0.1, false),
                                  peer("peer.torch.sdpa_flash", "unsupported", 0, false)});
  const auto ours = run({"run", "default", "--cpu", "--policy", "screen", "--db", db()});
  ASSERT_EQ(ours.exit_code, 0) << ours.err;
  const auto r = run({"peers", "import", path.string(), "--db", db()});
  EXPECT_EQ(r.exit_code, 5) << r.err;  // failed cases: the liar and the wrong one
  EXPECT_NE(r.out.find("peer.test.reference"), std::string::npos) << r.out;

  Store store(db(), StoreAccess::read_only);
  EXPECT_EQ(store.counts().workloads, 1) << "the peers' spec is the workload `run` stored";
  EXPECT_EQ(store.counts().devices, 1) << "the CPU the peers ran on is the host `run` used";
  std::map<std::string, Measurement> by_variant;
  for (const StoredMeasurement& m : store.find_measurements({})) {
    by_variant[m.measurement.variant] = m.measurement;
  }
  ASSERT_EQ(by_variant.count("peer.test.reference"), 1u);
  const Measurement& good = by_variant["peer.test.reference"];
  EXPECT_EQ(good.disposition, Disposition::passed);
  EXPECT_EQ(good.family, "paged_decode");
  EXPECT_EQ(good.policy, "screen");
  EXPECT_EQ(good.samples_us.size(), 5u);
  EXPECT_DOUBLE_EQ(good.stats.median, 12.0);  // computed here from the raw samples
  EXPECT_GT(good.bytes, 0);
  EXPECT_GT(good.flops, 0);
  EXPECT_DOUBLE_EQ(good.verification.tolerance, 5e-3);
  const Measurement& liar = by_variant["peer.test.liar"];
  EXPECT_EQ(liar.disposition, Disposition::incorrect);
  EXPECT_NE(liar.reason.find("verified by attn-bench"), std::string::npos) << liar.reason;
  EXPECT_TRUE(liar.samples_us.empty()) << "an incorrect peer is not timed";
  EXPECT_EQ(by_variant["peer.test.wrong"].disposition, Disposition::incorrect);
  EXPECT_EQ(by_variant["peer.torch.sdpa_flash"].disposition, Disposition::unsupported);

  // Export is of our kernels only.
  binary_ = ATTN_TUNE_BINARY;
  // (--include-unstable: the CPU run of ours may be noisy on a loaded machine.)
  const auto exported = run({"export", "--db", db(), "--format", "json", "--include-unstable"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_EQ(exported.out.find("peer."), std::string::npos) << exported.out;
  EXPECT_NE(exported.out.find("paged_decode.cpu_reference"), std::string::npos);
}

TEST_F(PeersCli, ImportOfAGpuNeitherHereNorInTheDatabaseIsAnEnvironmentError) {
  if (!discover_devices().devices.empty()) GTEST_SKIP() << "needs a machine without a GPU";
  std::string text = slurp(results_file({peer("peer.test.reference", "passed", 2e-3, true)}));
  const std::string cpu = "\"device\":{\"kind\":\"cpu\"}";
  const auto at = text.find(cpu);
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, cpu.size(),
               "\"device\":{\"kind\":\"gpu\",\"name\":\"NVIDIA H100\",\"uuid\":\"GPU-1234\"}");
  const auto r = run({"peers", "import", write("gpu.jsonl", text).string(), "--db", db()});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("GPU-1234"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace attn
