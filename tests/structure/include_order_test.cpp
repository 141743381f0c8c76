// The module order of docs/architecture.md holds in the code: every `#include "module/..."` of a
// module's sources (and of its CPU tests) names itself or a module below it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The modules from the line "Dependency order (bottom to top): a, b, c" of docs/architecture.md.
std::vector<std::string> declared_order() {
  const std::string doc = read_file(fs::path(ATTN_SOURCE_DIR) / "docs" / "architecture.md");
  const std::regex line(R"(Dependency order \(bottom to top\): ([a-z_, ]+))");
  std::smatch match;
  if (!std::regex_search(doc, match, line)) return {};
  std::vector<std::string> order;
  std::stringstream list(match[1].str());
  for (std::string item; std::getline(list, item, ',');) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) order.push_back(item);
  }
  return order;
}

// Each `#include "x/..."` of `text` whose x is a module, with its line number.
std::vector<std::pair<int, std::string>> module_includes(const std::string& text,
                                                         const std::map<std::string, int>& rank) {
  std::vector<std::pair<int, std::string>> out;
  const std::regex include(R"(^\s*#\s*include\s+"([a-z_]+)/)");
  std::stringstream lines(text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    std::smatch match;
    if (std::regex_search(line, match, include) && rank.count(match[1].str())) {
      out.emplace_back(number, match[1].str());
    }
  }
  return out;
}

bool is_source(const fs::path& path) {
  const std::string ext = path.extension().string();
  return ext == ".cpp" || ext == ".hpp" || ext == ".cuh" || ext == ".h";
}

// Every violation of the order among the sources under `folder`, which belongs to `module`.
std::vector<std::string> violations(const fs::path& folder, const std::string& module,
                                    const std::map<std::string, int>& rank, bool skip_gpu_tests) {
  std::vector<std::string> out;
  if (!fs::exists(folder)) return out;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    if (!entry.is_regular_file() || !is_source(entry.path())) continue;
    const std::string name = entry.path().filename().string();
    // The GPU tests are one integration executable over every module (tests/CMakeLists.txt).
    if (skip_gpu_tests && name.find("_gpu_") != std::string::npos) continue;
    for (const auto& [line, used] : module_includes(read_file(entry.path()), rank)) {
      if (rank.at(used) > rank.at(module)) {
        out.push_back(fs::relative(entry.path(), ATTN_SOURCE_DIR).string() + ":" +
                      std::to_string(line) + ": " + module + " includes " + used +
                      ", a module above it");
      }
    }
  }
  return out;
}

TEST(Structure, ArchitectureDeclaresEveryModuleFolder) {
  const std::vector<std::string> order = declared_order();
  ASSERT_FALSE(order.empty()) << "docs/architecture.md has no 'Dependency order' line";
  for (const std::string& module : order) {
    EXPECT_TRUE(fs::exists(fs::path(ATTN_SOURCE_DIR) / module / "CMakeLists.txt"))
        << module << " is declared but is no module folder with a CMakeLists.txt";
  }
  // A folder with a CMakeLists.txt at the top (a module) that the order forgets.
  for (const auto& entry : fs::directory_iterator(ATTN_SOURCE_DIR)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || name == "tests" || name == "cmake" || name[0] == '.' ||
        name.rfind("build", 0) == 0) {
      continue;
    }
    if (fs::exists(entry.path() / "CMakeLists.txt")) {
      EXPECT_NE(std::find(order.begin(), order.end(), name), order.end())
          << name << "/ is a module the dependency order does not declare";
    }
  }
}

TEST(Structure, ModulesIncludeOnlyModulesBelowThem) {
  const std::vector<std::string> order = declared_order();
  ASSERT_FALSE(order.empty());
  std::map<std::string, int> rank;
  for (size_t i = 0; i < order.size(); ++i) rank[order[i]] = int(i);
  std::vector<std::string> found;
  for (const std::string& module : order) {
    for (auto& v : violations(fs::path(ATTN_SOURCE_DIR) / module, module, rank, false)) {
      found.push_back(v);
    }
    for (auto& v : violations(fs::path(ATTN_SOURCE_DIR) / "tests" / module, module, rank, true)) {
      found.push_back(v);
    }
  }
  std::string all;
  for (const auto& v : found) all += "\n  " + v;
  EXPECT_TRUE(found.empty()) << found.size() << " include(s) against the order:" << all;
}

TEST(Structure, TheCheckFindsAnIncludeFromAbove) {
  // The scanner itself: a results file including measure/ and an apps include are caught, a
  // commented-out or system include is not.
  const std::map<std::string, int> rank{{"base", 0}, {"results", 1}, {"measure", 2}, {"apps", 3}};
  const auto found = module_includes(
      "#include <vector>\n#include \"base/errors.hpp\"\n// #include \"apps/x.hpp\"\n"
      "  #include \"measure/evaluator.hpp\"\n#include \"other/thing.hpp\"\n",
      rank);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0], std::make_pair(2, std::string("base")));
  EXPECT_EQ(found[1], std::make_pair(4, std::string("measure")));
}

}  // namespace
