// A damaged database file is refused before anything is written to it (results/store.hpp):
// SQLite's quick_check runs when a store opens a file for writing, and a file it finds damaged
// is an EnvironmentError (exit code 4) and stays byte for byte as it was. integrity_problems
// (results/sqlite.hpp) lists the damage, and nothing for a sound file.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "base/errors.hpp"
#include "results/sqlite.hpp"
#include "results/store.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// A store with enough rows that the table `table` spans pages of its own; returns the file.
fs::path filled_store(const fs::path& dir) {
  const fs::path path = dir / "results.db";
  Store store(path.string());
  Database& db = store.database();
  db.exec("CREATE TABLE padding (id INTEGER PRIMARY KEY, text TEXT)");
  Statement insert(db, "INSERT INTO padding (text) VALUES (?)");
  for (int i = 0; i < 2000; ++i) {
    insert.bind(1, "row " + std::to_string(i) + std::string(40, 'x'));
    insert.run();
    insert.reset();
  }
  return path;
}

// Writes garbage over the middle of a page of `table` (a leaf of its b-tree, not its root).
void damage_a_page_of(const fs::path& path, const std::string& table) {
  int64_t page = 0, page_size = 0;
  {
    Database db(path.string(), SQLITE_OPEN_READWRITE);
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    Statement size(db, "PRAGMA page_size");
    ASSERT_TRUE(size.step());
    page_size = size.column_int64(0);
    Statement root(db, "SELECT rootpage FROM sqlite_master WHERE name = ?");
    root.bind(1, table);
    ASSERT_TRUE(root.step());
    page = root.column_int64(0) + 2;  // a page of the table's first few
  }
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(std::streamoff((page - 1) * page_size + page_size / 2 - 64));
  const std::string garbage(256, '\xA5');
  file.write(garbage.data(), std::streamsize(garbage.size()));
}

class DamagedDatabase : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attn-damaged-db-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(DamagedDatabase, IsRefusedForWritingAndLeftByteForByte) {
  const fs::path path = filled_store(dir_);
  {
    Database db(path.string(), SQLITE_OPEN_READONLY);
    EXPECT_TRUE(integrity_problems(db, true).empty());
    EXPECT_TRUE(integrity_problems(db, false).empty());
  }
  damage_a_page_of(path, "padding");
  const std::string before = file_bytes(path);
  try {
    Store store(path.string());
    FAIL() << "a damaged file was opened for writing";
  } catch (const EnvironmentError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("is damaged: SQLite's quick_check reports: "), std::string::npos) << what;
    EXPECT_NE(what.find("It was left untouched"), std::string::npos) << what;
    EXPECT_NE(what.find("attn-tune db check"), std::string::npos) << what;
  }
  EXPECT_EQ(file_bytes(path), before) << "the file changed";
  Database db(path.string(), SQLITE_OPEN_READONLY);
  EXPECT_FALSE(integrity_problems(db, false).empty());
  EXPECT_LE(integrity_problems(db, false, 3).size(), 3u);
}

TEST_F(DamagedDatabase, CorruptResultCodesAreEnvironmentFailures) {
  EXPECT_TRUE(is_environment_failure(SQLITE_CORRUPT));
  EXPECT_TRUE(is_environment_failure(SQLITE_CORRUPT_INDEX));
  EXPECT_TRUE(is_environment_failure(SQLITE_NOTADB));
}

}  // namespace
}  // namespace attn
