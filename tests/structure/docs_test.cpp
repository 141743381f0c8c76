// What users read is kept whole: the README's command table is one table (a blank line inside
// it once turned the attn-tune half into plain text), docs/workload.md lists every preset, and
// user-facing text (README, docs, preset descriptions) names no internal tracker number and no
// throw-away helper script.
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

std::string read_doc(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The lines of `text` from the line starting with `heading` to the next line starting with "## ".
std::vector<std::string> section_lines(const std::string& text, const std::string& heading) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(heading, 0) == 0) {
      inside = true;
      continue;
    }
    if (inside && line.rfind("## ", 0) == 0) break;
    if (inside) lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& entry :
       fs::directory_iterator(fs::path(ATTN_SOURCE_DIR) / "workloads" / "presets")) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  return names;
}

TEST(Docs, ReadmeCommandTableIsOneTableWithBothPrograms) {
  const std::vector<std::string> lines =
      section_lines(read_doc(fs::path(ATTN_SOURCE_DIR) / "README.md"), "## Commands");
  ASSERT_FALSE(lines.empty()) << "README.md has no '## Commands' section";
  size_t first = 0;
  while (first < lines.size() && lines[first].rfind("|", 0) != 0) ++first;
  ASSERT_LT(first + 1, lines.size()) << "no table under '## Commands'";
  size_t last = first;
  while (last + 1 < lines.size() && lines[last + 1].rfind("|", 0) == 0) ++last;
  std::string table;
  for (size_t i = first; i <= last; ++i) table += lines[i] + "\n";
  EXPECT_EQ(lines[first + 1].rfind("|---", 0), 0u) << "the header row must be followed by |---|";
  for (const char* command :
       {"`attn-bench run", "`attn-bench peers", "`attn-bench list", "`attn-tune tune",
        "`attn-tune export", "`attn-tune report", "`attn-tune db info"}) {
    EXPECT_NE(table.find(command), std::string::npos)
        << command << " is not in the command table's rows (a blank line splits the table?)";
  }
  // Nothing after the table's end is another half of it.
  for (size_t i = last + 1; i < lines.size(); ++i) {
    EXPECT_NE(lines[i].rfind("| `attn-", 0), 0u) << "a command row after the table: " << lines[i];
  }
}

TEST(Docs, WorkloadMdListsEveryPreset) {
  const std::vector<std::string> lines =
      section_lines(read_doc(fs::path(ATTN_SOURCE_DIR) / "docs" / "workload.md"), "## Presets");
  std::string section;
  for (const std::string& line : lines) section += line + "\n";
  const std::vector<std::string> names = preset_names();
  EXPECT_GT(names.size(), 20u);
  for (const std::string& name : names) {
    EXPECT_NE(section.find("`" + name + "`"), std::string::npos)
        << "docs/workload.md, \"Presets\", does not list the preset `" << name << "`";
  }
}

TEST(Docs, UserTextNamesNoTrackerNumberOrHelperScript) {
  std::vector<fs::path> files = {fs::path(ATTN_SOURCE_DIR) / "README.md"};
  for (const auto& entry : fs::directory_iterator(fs::path(ATTN_SOURCE_DIR) / "docs")) {
    if (entry.path().extension() == ".md") files.push_back(entry.path());
    // The reports' indexes (docs/reports/*/README.md).
    if (entry.is_directory() && entry.path().filename() == "reports") {
      for (const auto& report : fs::directory_iterator(entry.path())) {
        if (fs::exists(report.path() / "README.md")) files.push_back(report.path() / "README.md");
      }
    }
  }
  for (const auto& entry :
       fs::directory_iterator(fs::path(ATTN_SOURCE_DIR) / "workloads" / "presets")) {
    files.push_back(entry.path());
  }
  // "issue 13", "issue #13", "(#13)"; and one-off scripts kept beside a checkout (.carry/*.sh).
  const std::regex tracker(R"((\b[Ii]ssues? #?[0-9]+)|(\(#[0-9]+\)))");
  const std::regex helper(R"(\.carry/[A-Za-z0-9_-]+\.sh)");
  for (const fs::path& file : files) {
    std::istringstream in(read_doc(file));
    size_t number = 0;
    for (std::string line; std::getline(in, line);) {
      ++number;
      EXPECT_FALSE(std::regex_search(line, tracker))
          << file.filename() << ":" << number << " names a tracker number: " << line;
      EXPECT_FALSE(std::regex_search(line, helper))
          << file.filename() << ":" << number << " names a helper script: " << line;
    }
  }
}

}  // namespace
