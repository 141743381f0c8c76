// Helpers shared by the workload tests.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "workloads/workload_spec.hpp"

namespace attn::test {

// A small valid workload as JSON, for tests to modify.
inline nlohmann::json valid_workload_json() {
  return nlohmann::json::parse(R"({
    "schema_version": 1,
    "name": "unit",
    "model": {"num_q_heads": 8, "num_kv_heads": 2, "head_dim": 64, "dtype": "bf16"},
    "kv_cache": {"page_size": 16, "layout": "NHD", "allocation": "shuffled"},
    "sequences": [{"context_len": 40, "query_len": 1, "count": 3}],
    "seed": 7
  })");
}

// The problems parse_workload reports for `text`; empty when it parses.
inline std::vector<std::string> problems_of(const std::string& text) {
  try {
    parse_workload(text, "test.json");
  } catch (const InputError& e) {
    EXPECT_EQ(e.source(), "test.json");
    EXPECT_EQ(e.code(), ExitCode::invalid_input);
    return e.problems();
  }
  return {};
}

inline std::vector<std::string> problems_of(const char* text) {
  return problems_of(std::string(text));
}

inline std::vector<std::string> problems_of(const nlohmann::json& doc) {
  return problems_of(doc.dump());
}

inline std::string joined(const std::vector<std::string>& problems) {
  std::string out;
  for (const auto& p : problems) out += p + "\n";
  return out;
}

// True when some problem contains every one of `parts`.
inline bool has_problem(const std::vector<std::string>& problems,
                        const std::vector<std::string>& parts) {
  for (const auto& p : problems) {
    bool all = true;
    for (const auto& part : parts) all = all && p.find(part) != std::string::npos;
    if (all) return true;
  }
  return false;
}

#define EXPECT_PROBLEM(problems, ...)                               \
  EXPECT_TRUE(::attn::test::has_problem((problems), {__VA_ARGS__})) \
      << ::attn::test::joined(problems)

}  // namespace attn::test
