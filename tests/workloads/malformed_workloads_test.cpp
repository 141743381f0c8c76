// Golden outputs for malformed workload files: each tests/workloads/malformed/NAME.json must be
// refused with exactly the problems in NAME.expected (first line: the exit code). Adding a case
// is adding two files. ATTN_REGENERATE_GOLDEN=1 rewrites the .expected files from the current
// messages (review the diff before committing it).
#include <dirent.h>
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/errors.hpp"
#include "workloads/workload_spec.hpp"

namespace attn {
namespace {

const std::string kDir = std::string(ATTN_SOURCE_DIR) + "/tests/workloads/malformed";

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  if (DIR* dir = opendir(kDir.c_str())) {
    while (dirent* entry = readdir(dir)) {
      const std::string file = entry->d_name;
      if (file.size() > 5 && file.compare(file.size() - 5, 5, ".json") == 0) {
        names.push_back(file.substr(0, file.size() - 5));
      }
    }
    closedir(dir);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string read_text(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// "exit N" and then one problem per line, as `attn-bench workload validate` prints them, with
// the checkout's location written as "<malformed>" so the goldens hold on any machine.
std::string outcome_of(const std::string& path) {
  std::string out;
  try {
    load_workload_file(path);
    return "exit 0\n";
  } catch (const InputError& e) {
    out = "exit " + std::to_string(int(e.code())) + "\n";
    for (const std::string& problem : e.problems()) out += problem + "\n";
  }
  for (size_t at = out.find(kDir); at != std::string::npos; at = out.find(kDir, at)) {
    out.replace(at, kDir.size(), "<malformed>");
  }
  return out;
}

TEST(MalformedWorkloads, EachFileGivesItsGoldenProblems) {
  const std::vector<std::string> names = case_names();
  EXPECT_GE(names.size(), 30u);
  const bool regenerate = std::getenv("ATTN_REGENERATE_GOLDEN") != nullptr;
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const std::string outcome = outcome_of(kDir + "/" + name + ".json");
    const std::string expected_path = kDir + "/" + name + ".expected";
    if (regenerate) std::ofstream(expected_path, std::ios::binary) << outcome;
    EXPECT_EQ(outcome, read_text(expected_path));
    EXPECT_EQ(outcome.rfind("exit 3\n", 0), 0u) << "a malformed file must exit with 3";
  }
}

}  // namespace
}  // namespace attn
