// A small, strict RAII layer over the SQLite C API: Database, Statement, Transaction and one check
// macro. Every value goes into SQL through a bound parameter, never through string formatting;
// Database::exec() is for fixed DDL and pragmas written in this program's source.
//
// Errors throw attn::CallError with library "SQLite", the (extended) result code, sqlite3_errstr
// of the code, sqlite3_errmsg of the connection, the failing expression and file:line.
//
// A Database and the Statements prepared on it are used by one thread at a time, and every
// Statement must be destroyed before its Database.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// True for result codes that say the machine, not the program, failed: a full disk or
// max_page_count (SQLITE_FULL), a read-only file or connection, an I/O error, a file that cannot be
// opened, no permission, no memory, a damaged file (SQLITE_CORRUPT, SQLITE_NOTADB). Their
// CallError carries ExitCode::environment.
bool is_environment_failure(int rc);

// Throws CallError for result code `rc` of a call on connection `db` (which may be null).
// `context` (e.g. the SQL being prepared) is appended to the detail when not empty.
[[noreturn]] void throw_sqlite_error(sqlite3* db, int rc, const char* expr, const char* file,
                                     int line, const std::string& context = {});

}  // namespace attn

// Checks a call that returns an SQLite result code: anything but SQLITE_OK throws CallError.
#define ATTN_SQLITE_CHECK(db, expr)                                                 \
  do {                                                                              \
    const int attn_sqlite_rc_ = (expr);                                             \
    if (attn_sqlite_rc_ != SQLITE_OK)                                               \
      ::attn::throw_sqlite_error((db), attn_sqlite_rc_, #expr, __FILE__, __LINE__); \
  } while (0)

namespace attn {

class Database {
 public:
  // Flags as for sqlite3_open_v2, e.g. SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE. ":memory:"
  // opens a private in-memory database. Extended result codes are switched on.
  Database(const std::string& path, int flags);
  ~Database();
  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs fixed SQL (DDL, pragmas, BEGIN/COMMIT), possibly several statements. Never pass it text
  // that holds a value: use a Statement and bind.
  void exec(const char* sql);
  void busy_timeout(int milliseconds);
  int64_t last_insert_rowid() const;
  int64_t changes() const;  // rows changed by the last INSERT, UPDATE or DELETE
  bool in_transaction() const;
  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

class Statement {
 public:
  // Prepares exactly one statement: trailing SQL after the first statement is an error.
  Statement(Database& db, std::string_view sql);
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are numbered from 1, or named as written in the SQL (":run_id"). An unknown name
  // or an index out of range throws. A NaN double is stored as NULL (SQLite has no NaN).
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, int value) { return bind(index, int64_t(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
  Statement& bind(int index, const std::string& text) {
    return bind(index, std::string_view(text));
  }
  Statement& bind_blob(int index, const void* data, size_t size);
  Statement& bind(int index, const std::vector<uint8_t>& blob) {
    return bind_blob(index, blob.data(), blob.size());
  }
  Statement& bind_null(int index);
  Statement& bind(int index, std::nullopt_t) { return bind_null(index); }
  template <typename T>
  Statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind_null(index);
  }
  template <typename T>
  Statement& bind(const char* name, const T& value) {
    return bind(parameter_index(name), value);
  }
  Statement& bind_null(const char* name) { return bind_null(parameter_index(name)); }
  Statement& bind_blob(const char* name, const void* data, size_t size) {
    return bind_blob(parameter_index(name), data, size);
  }
  int parameter_index(const char* name) const;  // throws if the SQL has no such parameter

  // Advances: true when a row is ready to read, false when the statement is done.
  bool step();
  // Steps a statement that must not return rows (INSERT, UPDATE, DDL) to completion.
  void run();
  // Rewinds for another step() with new bindings (bindings are kept until rebound or cleared).
  // The error of a failed step() was already thrown by step(), so reset() does not repeat it.
  void reset();
  void clear_bindings();

  // Columns of the current row, numbered from 0. Getters are strict: reading a NULL or a value
  // of another storage class throws (an INTEGER may be read as a double); use the optional
  // getters for nullable columns.
  int column_count() const;
  std::string column_name(int column) const;
  int column_type(
      int column) const;  // SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB, SQLITE_NULL
  bool is_null(int column) const { return column_type(column) == SQLITE_NULL; }
  int64_t column_int64(int column) const;
  double column_double(int column) const;
  std::string column_text(int column) const;
  std::vector<uint8_t> column_blob(int column) const;
  std::optional<int64_t> column_optional_int64(int column) const;
  std::optional<double> column_optional_double(int column) const;
  std::optional<std::string> column_optional_text(int column) const;

  std::string sql() const;
  sqlite3_stmt* handle() const { return stmt_; }

 private:
  void check_column(int column, const char* getter) const;
  [[noreturn]] void throw_type_error(int column, const char* wanted) const;

  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  bool has_row_ = false;
};

// BEGIN IMMEDIATE on construction (takes the write lock now, waiting up to busy_timeout, so the
// transaction cannot fail later for lack of it). commit() makes the changes durable; if it is not
// called, or it threw, the destructor rolls back. The destructor never throws. Inside another
// Transaction it is a savepoint: commit() keeps its changes as part of the outer transaction (which
// decides), and the destructor without commit() undoes only its own changes.
class Transaction {
 public:
  explicit Transaction(Database& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  void commit();

 private:
  Database& db_;
  bool nested_ = false;
  bool committed_ = false;
};

// What SQLite's own check finds wrong with a database file: nothing (empty) for a sound one, else
// its messages ("*** in database main *** Page 7: ..."), at most `limit` of them. `quick`: PRAGMA
// quick_check (the b-trees, records and free list; O(size)); otherwise PRAGMA integrity_check,
// which also checks every index against its table. A file too damaged to be read at all gives
// one message, the error's. Only reads.
std::vector<std::string> integrity_problems(Database& db, bool quick, size_t limit = 20);

// Copies every page of `from` (schema and rows, user_version and application_id included) over
// `to`, with SQLite's online backup API, so that `to` becomes a copy of `from`: e.g. a file into a
// ":memory:" database, to migrate the copy without writing the file. Only reads `from`.
void copy_database(Database& from, Database& to);

}  // namespace attn
