// `attn-bench run --cpu`, `workload dump` and `peers` on a multi-head latent attention workload:
// mla_decode.cpu_reference runs and passes verification against the dense oracle, every other
// family's CPU reference declines naming latent attention, the dump holds the latent pool, and
// the peers refuse the workload.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/apps/cli_runner.hpp"

namespace attn {
namespace {

using testing::Cli;
using testing::CliResult;

// Speculative decode (1 to 3 query tokens) over a small latent cache: a fraction of a second.
constexpr const char* kTinyLatent = R"({
  "schema_version": 2,
  "name": "latent-tiny",
  "model": {"attention": "mla", "num_q_heads": 8, "kv_lora_rank": 128, "qk_rope_head_dim": 32,
            "dtype": "bf16"},
  "kv_cache": {"page_size": 16},
  "sequences": [{"context_len": 45, "query_len": 1, "count": 2},
                {"context_len": 30, "query_len": 3, "count": 2}],
  "seed": 3
})";

class LatentAttentionCli : public Cli {};

TEST_F(LatentAttentionCli, TheMlaCpuReferenceRunsVerifiedAndTheOtherFamiliesDecline) {
  write("latent.json", kTinyLatent);
  const CliResult r = run({"run", "latent.json", "--cpu", "--samples", "2", "--warmup", "0",
                           "--noise", "0.9", "--db", "r.db", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  int declined = 0;
  bool ran = false;
  for (const nlohmann::json& row : doc["rows"]) {
    const std::string variant = row["variant"];
    if (variant == "mla_decode.cpu_reference") {
      ran = true;
      EXPECT_EQ(row["status"], "passed") << row.dump();
      ASSERT_TRUE(row["rel_err"].is_number()) << row.dump();
      EXPECT_LT(row["rel_err"].get<double>(), 1e-2);  // bf16 output against the dense oracle
      EXPECT_GT(row["median_us"].get<double>(), 0.0);
    } else {
      ++declined;
      EXPECT_EQ(row["status"], "unsupported") << row.dump();
      EXPECT_NE(row.dump().find("multi-head latent attention"), std::string::npos) << row.dump();
    }
  }
  EXPECT_TRUE(ran) << r.out;
  EXPECT_EQ(declined, 4);
  EXPECT_NE(r.err.find("latent attention (kv_lora_rank 128, qk_rope_head_dim 32)"),
            std::string::npos)
      << r.err;
}

TEST_F(LatentAttentionCli, TheDumpHoldsTheLatentPoolAndAnOutputInLatentSpace) {
  write("latent.json", kTinyLatent);
  const CliResult r = run({"workload", "dump", "latent.json", "--out", "dump"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json index = nlohmann::json::parse(testing::slurp(dir_ / "dump" / "batch.json"));
  EXPECT_EQ(index["batch"]["attention"], "mla");
  EXPECT_EQ(index["batch"]["kv_lora_rank"], 128);
  EXPECT_EQ(index["batch"]["head_dim"], 160);
  std::vector<std::string> names;
  for (const nlohmann::json& t : index["tensors"]) {
    names.push_back(t["name"]);
    if (t["name"] == "latent_cache") {
      EXPECT_EQ(t["shape"], nlohmann::json::array({index["batch"]["num_pages"], 16, 160}));
    }
    if (t["name"] == "reference_out") {
      EXPECT_EQ(t["shape"], nlohmann::json::array({8, 8, 128}));
    }
    if (t["name"] == "q") {
      EXPECT_EQ(t["shape"], nlohmann::json::array({8, 8, 160}));
    }
  }
  EXPECT_NE(std::find(names.begin(), names.end(), "latent_cache"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "k_cache"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "v_cache"), names.end());
}

// `attn-bench peers` on a latent batch: the peers of standard attention are declined by name, the
// one that runs latent attention is asked (on the CPU it says it needs the GPU), and ours run.
TEST_F(LatentAttentionCli, PeersDeclineALatentWorkloadExceptTheLatentPeer) {
  write("latent.json", kTinyLatent);
  const CliResult r = run(
      {"peers", "latent.json", "--cpu", "--python", ATTN_PEERS_TEST_PYTHON, "--db", "peers.db"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("mla_decode.cpu_reference"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("peer.torch.mla_sdpa"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace attn
