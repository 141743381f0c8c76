// attn-bench workload validate / show / dump, run as a user would: exit codes, what they print,
// and a dump whose bytes match the batch generated again in this process.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/exit_codes.hpp"
#include "kernels/problem.hpp"
#include "kernels/reference/paged_attention_reference.hpp"
#include "tests/apps/cli_runner.hpp"
#include "workloads/batch_dump.hpp"
#include "workloads/presets.hpp"
#include "workloads/safetensors.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;

class WorkloadCli : public testing::Cli {};

using testing::kInvalidInput;

TEST_F(WorkloadCli, ValidatePrintsNameAndHashForAPresetAndAFile) {
  const std::string hash = content_hash(load_preset("default"));
  CliResult r = run({"workload", "validate", "default"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // The name and hash, then the host memory a run needs against the budget.
  EXPECT_EQ(r.out.rfind("ok: " + load_preset("default").name + " (" + hash +
                            ")\nmemory: " + "attn-bench run needs about ",
                        0),
            0u)
      << r.out;
  EXPECT_NE(r.out.find(" of host memory (budget "), std::string::npos) << r.out;
  const fs::path file = write("mine.json", std::string(*preset_text("default")));
  r = run({"workload", "validate", file.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(hash), std::string::npos) << r.out;
}

TEST_F(WorkloadCli, ValidateReportsEveryErrorWithExitThree) {
  const fs::path file = write("bad.json", R"({
  "schema_version": 1,
  "name": "bad",
  "model": {"num_q_heads": 32, "num_kv_heads": 5, "head_dim": 100, "dtype": "bf16"},
  "sequences": [{"context_len": 10}]
})");
  CliResult r = run({"workload", "validate", file.string()});
  EXPECT_EQ(r.exit_code, kInvalidInput);
  EXPECT_EQ(r.out.find("ok:"), std::string::npos);
  EXPECT_NE(r.err.find("/model/head_dim"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/model/num_kv_heads"), std::string::npos) << r.err;
  r = run({"workload", "validate", "no-such-thing"});
  EXPECT_EQ(r.exit_code, kInvalidInput);
  EXPECT_NE(r.err.find("`attn-bench list` lists the presets"), std::string::npos) << r.err;
  EXPECT_EQ(run({"workload", "validate"}).exit_code, int(ExitCode::usage));
  EXPECT_EQ(run({"workload"}).exit_code, int(ExitCode::usage));
}

TEST_F(WorkloadCli, ShowSummarisesTheBatch) {
  const Batch batch = generate_batch(load_preset("default"));
  const CliResult r = run({"workload", "show", "default"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(batch.spec_hash), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sequences  " + std::to_string(batch.num_seqs)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kv tokens " + std::to_string(batch.total_kv)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FLOP useful"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("traffic    minimum "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" logical per pass, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" unique (Q, output, the K/V rows some query sees"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("causal"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kv_len histogram"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#"), std::string::npos) << r.out;
}

// The dump parses as safetensors, its index lists every tensor with the hash of its bytes, and
// the bytes are those of the batch generated again here (and of the reference computed here).
TEST_F(WorkloadCli, DumpMatchesRegeneration) {
  const CliResult r = run({"workload", "dump", "default", "--out", (dir_ / "out").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const SafetensorsFile file = read_safetensors((dir_ / "out" / kDumpTensorsFile).string());
  const nlohmann::json index = nlohmann::json::parse(testing::slurp(dir_ / "out" / kDumpIndexFile));
  const Batch batch = generate_batch(load_preset("default"));
  EXPECT_EQ(index["spec_hash"], batch.spec_hash);
  EXPECT_EQ(file.metadata.at("spec_hash"), batch.spec_hash);
  EXPECT_EQ(index["spec"], nlohmann::json::parse(canonical_json(batch.spec)));

  std::vector<DumpTensor> expected = batch_tensors(batch);
  expected.push_back(
      reference_output_tensor(batch, paged_attention_reference(Problem::on_host(batch), 2)));
  ASSERT_EQ(index["tensors"].size(), expected.size());
  ASSERT_EQ(file.tensors.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const SafetensorsTensor& want = expected[i].tensor;
    const nlohmann::json& entry = index["tensors"][i];
    EXPECT_EQ(entry["name"], want.name);
    EXPECT_EQ(entry["dtype"], want.dtype);
    EXPECT_EQ(entry["shape"].get<std::vector<int64_t>>(), want.shape);
    EXPECT_EQ(entry["sha256"], tensor_sha256(want)) << want.name;
    EXPECT_FALSE(entry["meaning"].get<std::string>().empty());
    const SafetensorsTensor* got = file.find(want.name);
    ASSERT_NE(got, nullptr) << want.name;
    EXPECT_EQ(got->dtype, want.dtype);
    EXPECT_EQ(got->shape, want.shape);
    EXPECT_EQ(tensor_sha256(*got), tensor_sha256(want)) << want.name;
  }
  for (const char* name : {"q", "k_cache", "v_cache", "block_table", "page_indptr", "page_indices",
                           "last_page_len", "cu_seqlens_q", "cu_seqlens_kv", "context_lens",
                           "query_lens", "kv_lens", "slot_mapping", "reference_out"}) {
    EXPECT_NE(file.find(name), nullptr) << name;
  }
}

TEST_F(WorkloadCli, DumpWithoutReferenceAndItsUsageErrors) {
  CliResult r =
      run({"workload", "dump", "default", "--out", (dir_ / "out").string(), "--no-reference"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const SafetensorsFile file = read_safetensors((dir_ / "out" / kDumpTensorsFile).string());
  EXPECT_EQ(file.find("reference_out"), nullptr);
  EXPECT_NE(file.find("k_cache"), nullptr);
  EXPECT_EQ(run({"workload", "dump", "default"}).exit_code, int(ExitCode::usage));  // no --out
  r = run({"workload", "dump", "nope.json", "--out", (dir_ / "x").string()});
  EXPECT_EQ(r.exit_code, kInvalidInput);
  EXPECT_FALSE(fs::exists(dir_ / "x")) << "a folder was created for an invalid workload";
}

}  // namespace
}  // namespace attn
