#include "results/sqlite.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/errors.hpp"

namespace attn {
namespace {

Database memory_db() {
  return Database(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
}

int64_t count_rows(Database& db, const char* table_sql) {
  Statement s(db, table_sql);
  EXPECT_TRUE(s.step());
  return s.column_int64(0);
}

TEST(SqliteStatement, BindsAndReadsEveryType) {
  Database db = memory_db();
  db.exec("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n)");
  Statement insert(db, "INSERT INTO t (i, r, s, b, n) VALUES (?, ?, ?, ?, ?)");
  const std::vector<uint8_t> blob = {0x00, 0xff, 0x10, 0x00, 0x7f};
  insert.bind(1, int64_t(-9007199254740993))
      .bind(2, 0.1)
      .bind(3, std::string("h\xc3\xa9llo\0x", 8))
      .bind(4, blob)
      .bind_null(5);
  insert.run();
  EXPECT_EQ(db.changes(), 1);
  EXPECT_EQ(db.last_insert_rowid(), 1);

  Statement select(db, "SELECT i, r, s, b, n FROM t");
  ASSERT_TRUE(select.step());
  EXPECT_EQ(select.column_count(), 5);
  EXPECT_EQ(select.column_name(2), "s");
  EXPECT_EQ(select.column_type(0), SQLITE_INTEGER);
  EXPECT_EQ(select.column_type(1), SQLITE_FLOAT);
  EXPECT_EQ(select.column_type(2), SQLITE_TEXT);
  EXPECT_EQ(select.column_type(3), SQLITE_BLOB);
  EXPECT_EQ(select.column_type(4), SQLITE_NULL);
  EXPECT_EQ(select.column_int64(0), -9007199254740993);
  EXPECT_EQ(select.column_double(1), 0.1);                              // exact: REAL is a binary64
  EXPECT_EQ(select.column_text(2), std::string("h\xc3\xa9llo\0x", 8));  // embedded NUL kept
  EXPECT_EQ(select.column_blob(3), blob);
  EXPECT_TRUE(select.is_null(4));
  EXPECT_FALSE(select.column_optional_int64(4).has_value());
  EXPECT_FALSE(select.column_optional_double(4).has_value());
  EXPECT_FALSE(select.column_optional_text(4).has_value());
  EXPECT_EQ(select.column_optional_int64(0), -9007199254740993);
  EXPECT_FALSE(select.step());
}

TEST(SqliteStatement, EmptyTextAndBlobAreNotNull) {
  Database db = memory_db();
  Statement s(db, "SELECT ?, ?, typeof(?2)");
  s.bind(1, std::string()).bind(2, std::vector<uint8_t>());
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.column_type(0), SQLITE_TEXT);
  EXPECT_EQ(s.column_text(0), "");
  EXPECT_EQ(s.column_type(1), SQLITE_BLOB);
  EXPECT_TRUE(s.column_blob(1).empty());
  EXPECT_EQ(s.column_text(2), "blob");
}

TEST(SqliteStatement, BindsOptionalAndByName) {
  Database db = memory_db();
  Statement s(db, "SELECT :a, :b, :c, :d, :a");
  s.bind(":a", std::optional<int64_t>(7))
      .bind(":b", std::optional<double>())
      .bind(":c", std::optional<std::string>("x"))
      .bind(":d", std::nullopt);
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.column_int64(0), 7);
  EXPECT_TRUE(s.is_null(1));
  EXPECT_EQ(s.column_text(2), "x");
  EXPECT_TRUE(s.is_null(3));
  EXPECT_EQ(s.column_int64(4), 7);  // a name used twice is one parameter
  EXPECT_THROW(s.bind(":missing", int64_t(1)), CallError);
}

TEST(SqliteStatement, NanIsStoredAsNullAndInfinityKept) {
  Database db = memory_db();
  Statement s(db, "SELECT ?, ?");
  s.bind(1, std::numeric_limits<double>::quiet_NaN())
      .bind(2, std::numeric_limits<double>::infinity());
  ASSERT_TRUE(s.step());
  EXPECT_TRUE(s.is_null(0));
  EXPECT_TRUE(std::isinf(s.column_double(1)));
}

TEST(SqliteStatement, GettersAreStrictAboutTypeRowAndRange) {
  Database db = memory_db();
  Statement s(db, "SELECT 'text', NULL, 3");
  EXPECT_THROW(s.column_int64(0), CallError);  // no current row yet
  ASSERT_TRUE(s.step());
  EXPECT_THROW(s.column_int64(0), CallError);  // TEXT is not an INTEGER
  EXPECT_THROW(s.column_text(1), CallError);   // NULL needs the optional getter
  EXPECT_THROW(s.column_double(0), CallError);
  EXPECT_THROW(s.column_text(3), CallError);  // out of range
  EXPECT_THROW(s.column_text(-1), CallError);
  EXPECT_EQ(s.column_double(2), 3.0);              // an INTEGER reads as a double
  EXPECT_THROW(s.bind(4, int64_t(1)), CallError);  // no parameter 4
  EXPECT_FALSE(s.step());
  EXPECT_THROW(s.column_text(0), CallError);  // done: no row
}

TEST(SqliteStatement, ResetRunsAgainWithNewBindings) {
  Database db = memory_db();
  db.exec("CREATE TABLE t (x INTEGER)");
  Statement insert(db, "INSERT INTO t (x) VALUES (?)");
  for (int64_t x : {1, 2, 3}) {
    insert.bind(1, x);
    insert.run();
    insert.reset();
  }
  Statement sum(db, "SELECT sum(x), count(*) FROM t");
  ASSERT_TRUE(sum.step());
  EXPECT_EQ(sum.column_int64(0), 6);
  EXPECT_EQ(sum.column_int64(1), 3);
  sum.reset();
  ASSERT_TRUE(sum.step());  // readable again after reset
  EXPECT_EQ(sum.column_int64(0), 6);

  Statement pair(db, "SELECT ?");
  pair.bind(1, int64_t(5));
  pair.clear_bindings();
  ASSERT_TRUE(pair.step());
  EXPECT_TRUE(pair.is_null(0));
}

TEST(SqliteStatement, RunRefusesAStatementThatReturnsRows) {
  Database db = memory_db();
  Statement s(db, "SELECT 1");
  EXPECT_THROW(s.run(), CallError);
}

TEST(SqliteStatement, MovesOwnership) {
  Database db = memory_db();
  Statement a(db, "SELECT 42");
  Statement b(std::move(a));
  EXPECT_EQ(a.handle(), nullptr);
  ASSERT_TRUE(b.step());
  EXPECT_EQ(b.column_int64(0), 42);
  Statement c(db, "SELECT 1");
  c = std::move(b);
  EXPECT_EQ(b.handle(), nullptr);
  EXPECT_EQ(c.sql(), "SELECT 42");
}

TEST(SqliteStatement, MetacharactersAreStoredVerbatim) {
  Database db = memory_db();
  db.exec("CREATE TABLE runs (id INTEGER PRIMARY KEY, command_line TEXT)");
  const std::string hostile = "'); DROP TABLE runs;--";
  Statement insert(db, "INSERT INTO runs (command_line) VALUES (?)");
  insert.bind(1, hostile);
  insert.run();
  Statement select(db, "SELECT command_line FROM runs WHERE command_line = ?");
  select.bind(1, hostile);
  ASSERT_TRUE(select.step());
  EXPECT_EQ(select.column_text(0), hostile);
  EXPECT_EQ(count_rows(db, "SELECT count(*) FROM sqlite_master WHERE name = 'runs'"), 1);
}

TEST(SqliteCheck, BadSqlThrowsWithCodeMessageAndLocation) {
  Database db = memory_db();
  try {
    Statement s(db, "SELEC 1");
    FAIL() << "prepare of bad SQL did not throw";
  } catch (const CallError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.library(), "SQLite");
    EXPECT_EQ(e.status() & 0xff, SQLITE_ERROR);
    EXPECT_NE(what.find("SQLite error 1"), std::string::npos) << what;
    EXPECT_NE(what.find("syntax error"), std::string::npos) << what;
    EXPECT_NE(what.find("SELEC 1"), std::string::npos) << what;  // the SQL it choked on
    EXPECT_NE(what.find("sqlite.cpp:"), std::string::npos) << what;
    EXPECT_EQ(e.code(), ExitCode::internal);
  }
  EXPECT_THROW(db.exec("CREATE TABLE"), CallError);
  EXPECT_THROW(Statement(db, "SELECT * FROM no_such_table"), CallError);
}

TEST(SqliteCheck, MacroThrowsOnlyOnFailure) {
  Database db = memory_db();
  EXPECT_NO_THROW(ATTN_SQLITE_CHECK(db.handle(), SQLITE_OK));
  try {
    ATTN_SQLITE_CHECK(db.handle(), sqlite3_exec(db.handle(), "NOT SQL", nullptr, nullptr, nullptr));
    FAIL() << "ATTN_SQLITE_CHECK did not throw";
  } catch (const CallError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("sqlite3_exec(db.handle(), \"NOT SQL\""), std::string::npos) << what;
    EXPECT_NE(what.find("sqlite_test.cpp:"), std::string::npos) << what;
    EXPECT_NE(what.find("SQL logic error"), std::string::npos) << what;  // sqlite3_errstr
  }
}

TEST(SqliteCheck, ConstraintErrorsCarryTheExtendedCode) {
  Database db = memory_db();
  db.exec("CREATE TABLE t (x INTEGER UNIQUE)");
  Statement insert(db, "INSERT INTO t (x) VALUES (1)");
  insert.run();
  insert.reset();
  try {
    insert.run();
    FAIL() << "duplicate insert did not throw";
  } catch (const CallError& e) {
    EXPECT_EQ(e.status(), SQLITE_CONSTRAINT_UNIQUE);
    EXPECT_NE(std::string(e.what()).find("UNIQUE constraint failed: t.x"), std::string::npos)
        << e.what();
  }
}

TEST(SqliteCheck, OneStatementPerStatement) {
  Database db = memory_db();
  db.exec("CREATE TABLE t (x)");
  EXPECT_THROW(Statement(db, "INSERT INTO t VALUES (1); DROP TABLE t"), CallError);
  EXPECT_EQ(count_rows(db, "SELECT count(*) FROM sqlite_master WHERE name = 't'"), 1);
  EXPECT_EQ(count_rows(db, "SELECT count(*) FROM t"), 0);  // the first statement never ran
  EXPECT_NO_THROW(Statement(db, "SELECT 1;  -- a trailing comment\n"));
  EXPECT_THROW(Statement(db, "  "), CallError);  // no statement at all
}

TEST(SqliteCheck, OpeningAMissingDirectoryThrows) {
  EXPECT_THROW(Database("/nonexistent-attn-dir/x/y.db", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE),
               CallError);
}

TEST(SqliteTransaction, RollsBackWhenDestroyedWithoutCommit) {
  Database db = memory_db();
  db.exec("CREATE TABLE t (x INTEGER)");
  {
    Transaction transaction(db);
    EXPECT_TRUE(db.in_transaction());
    Statement(db, "INSERT INTO t (x) VALUES (1)").run();
    EXPECT_EQ(count_rows(db, "SELECT count(*) FROM t"), 1);
  }
  EXPECT_FALSE(db.in_transaction());
  EXPECT_EQ(count_rows(db, "SELECT count(*) FROM t"), 0);
}

TEST(SqliteTransaction, RollsBackWhenAnExceptionLeavesTheScope) {
  Database db = memory_db();
  db.exec("CREATE TABLE t (x INTEGER NOT NULL)");
  try {
    Transaction transaction(db);
    Statement(db, "INSERT INTO t (x) VALUES (1)").run();
    Statement(db, "INSERT INTO t (x) VALUES (NULL)").run();  // throws
    transaction.commit();
    FAIL() << "NOT NULL violation did not throw";
  } catch (const CallError&) {
  }
  EXPECT_FALSE(db.in_transaction());
  EXPECT_EQ(count_rows(db, "SELECT count(*) FROM t"), 0);
}

TEST(SqliteTransaction, CommitKeepsChanges) {
  Database db = memory_db();
  db.exec("CREATE TABLE t (x INTEGER)");
  {
    Transaction transaction(db);
    Statement(db, "INSERT INTO t (x) VALUES (1)").run();
    Statement(db, "INSERT INTO t (x) VALUES (2)").run();
    transaction.commit();
    EXPECT_FALSE(db.in_transaction());
    EXPECT_THROW(transaction.commit(), Error);  // twice is a bug
  }
  EXPECT_EQ(count_rows(db, "SELECT count(*) FROM t"), 2);
}

// Inside another transaction a Transaction is a savepoint: committing it leaves the decision to
// the outer one, dropping it undoes only its own changes.
TEST(SqliteTransaction, NestsAsASavepointTheOuterOneDecides) {
  Database db = memory_db();
  db.exec("CREATE TABLE t (x INTEGER)");
  {
    Transaction outer(db);
    Statement(db, "INSERT INTO t (x) VALUES (1)").run();
    {
      Transaction inner(db);
      Statement(db, "INSERT INTO t (x) VALUES (2)").run();
    }  // no commit: only 2 is undone
    EXPECT_TRUE(db.in_transaction());
    {
      Transaction inner(db);
      Statement(db, "INSERT INTO t (x) VALUES (3)").run();
      inner.commit();
    }
    EXPECT_TRUE(db.in_transaction()) << "an inner commit must not end the outer transaction";
    EXPECT_EQ(count_rows(db, "SELECT count(*) FROM t"), 2);
    outer.commit();
  }
  EXPECT_EQ(count_rows(db, "SELECT count(*) FROM t WHERE x IN (1, 3)"), 2);
  EXPECT_EQ(count_rows(db, "SELECT count(*) FROM t"), 2);
  {
    Transaction outer(db);
    {
      Transaction inner(db);
      Statement(db, "INSERT INTO t (x) VALUES (4)").run();
      inner.commit();
    }
  }  // the outer one rolls back what the inner one committed
  EXPECT_FALSE(db.in_transaction());
  EXPECT_EQ(count_rows(db, "SELECT count(*) FROM t WHERE x = 4"), 0);
}

TEST(SqliteDatabase, MovesOwnership) {
  Database a = memory_db();
  a.exec("CREATE TABLE t (x)");
  Database b(std::move(a));
  EXPECT_EQ(a.handle(), nullptr);
  EXPECT_EQ(b.path(), ":memory:");
  EXPECT_EQ(count_rows(b, "SELECT count(*) FROM sqlite_master WHERE name = 't'"), 1);
}

TEST(SqliteDatabase, BusyTimeoutIsSet) {
  Database db = memory_db();
  db.busy_timeout(1234);
  Statement s(db, "PRAGMA busy_timeout");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.column_int64(0), 1234);
}

// A full database (max_page_count here, a full disk in life) and a read-only one are the machine's
// failures: their CallError carries the environment exit code; a bad statement stays internal.
TEST(SqliteCheck, FullAndReadOnlyDatabasesAreEnvironmentFailures) {
  EXPECT_TRUE(is_environment_failure(SQLITE_FULL));
  EXPECT_TRUE(is_environment_failure(SQLITE_READONLY));
  EXPECT_TRUE(is_environment_failure(SQLITE_IOERR_WRITE));
  EXPECT_TRUE(is_environment_failure(SQLITE_CANTOPEN));
  EXPECT_FALSE(is_environment_failure(SQLITE_ERROR));
  EXPECT_FALSE(is_environment_failure(SQLITE_CONSTRAINT_UNIQUE));

  Database db = memory_db();
  db.exec("CREATE TABLE t (x BLOB)");
  Statement count(db, "PRAGMA page_count");
  ASSERT_TRUE(count.step());
  const int64_t pages = count.column_int64(0);
  count.reset();
  // A pragma takes no bound parameter; the value is this test's own integer.
  db.exec(("PRAGMA max_page_count = " + std::to_string(pages + 2)).c_str());
  try {
    Statement insert(db, "INSERT INTO t VALUES (zeroblob(100000))");
    insert.run();
    FAIL() << "a 100 kB row fitted in 2 pages";
  } catch (const CallError& e) {
    EXPECT_EQ(e.status() & 0xff, SQLITE_FULL);
    EXPECT_EQ(e.code(), ExitCode::environment);
  }
  db.exec("PRAGMA query_only = ON");
  try {
    db.exec("INSERT INTO t VALUES (1)");
    FAIL() << "a write on a query-only connection";
  } catch (const CallError& e) {
    EXPECT_EQ(e.status() & 0xff, SQLITE_READONLY);
    EXPECT_EQ(e.code(), ExitCode::environment);
  }
}

}  // namespace
}  // namespace attn
