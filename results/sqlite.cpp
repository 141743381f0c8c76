#include "results/sqlite.hpp"

#include <cctype>
#include <cmath>
#include <utility>

#include "base/errors.hpp"

namespace attn {

namespace {

const char* storage_class_name(int type) {
  switch (type) {
    case SQLITE_INTEGER:
      return "INTEGER";
    case SQLITE_FLOAT:
      return "REAL";
    case SQLITE_TEXT:
      return "TEXT";
    case SQLITE_BLOB:
      return "BLOB";
    case SQLITE_NULL:
      return "NULL";
  }
  return "?";
}

// True when `sql` holds no further statement: only whitespace, semicolons or comments.
bool holds_no_statement(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db, sql.c_str(), int(sql.size()), 0, &stmt, nullptr);
  if (stmt != nullptr) sqlite3_finalize(stmt);
  return rc == SQLITE_OK && stmt == nullptr;
}

// SQL as it appears in an error message: whitespace runs collapsed to one space, cut after 400
// characters (the error text from SQLite already says where it stopped: near "...").
std::string sql_for_message(const std::string& sql) {
  std::string out;
  bool space = false;
  for (char c : sql) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
    if (out.size() >= 400) return out + " ...";
  }
  return out;
}

}  // namespace

bool is_environment_failure(int rc) {
  switch (rc & 0xff) {
    case SQLITE_FULL:
    case SQLITE_READONLY:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_NOLFS:
    case SQLITE_NOMEM:
    case SQLITE_CORRUPT:  // a damaged file is the machine's (the disk's), not a bug of ours
    case SQLITE_NOTADB:
      return true;
    default:
      return false;
  }
}

void throw_sqlite_error(sqlite3* db, int rc, const char* expr, const char* file, int line,
                        const std::string& context) {
  std::string status_name = sqlite3_errstr(rc);
  std::string detail;
  if (db != nullptr && sqlite3_errcode(db) != SQLITE_OK) {
    std::string message = sqlite3_errmsg(db);
    if (message != status_name) detail = message;
  }
  if (!context.empty()) detail += (detail.empty() ? "" : "; ") + context;
  throw CallError("SQLite", rc, status_name, detail, expr, file, line,
                  is_environment_failure(rc) ? ExitCode::environment : ExitCode::internal);
}

// ---------------------------------------------------------------------------------- Database

Database::Database(const std::string& path, int flags) : path_(path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    // sqlite3_open_v2 returns a handle even on failure (unless out of memory); it holds the
    // message and must be closed.
    try {
      throw_sqlite_error(db, rc, "sqlite3_open_v2(path, &db, flags, nullptr)", __FILE__, __LINE__,
                         "opening '" + path + "'");
    } catch (...) {
      sqlite3_close_v2(db);
      throw;
    }
  }
  db_ = db;
  sqlite3_extended_result_codes(db_, 1);
}

Database::~Database() {
  // close_v2 never fails for a valid handle: statements still open (a bug) turn the connection
  // into a zombie that is closed when the last one is finalized.
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

Database::Database(Database&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    if (db_ != nullptr) sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

void Database::exec(const char* sql) {
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) {
    throw_sqlite_error(db_, rc, "sqlite3_exec(db, sql, nullptr, nullptr, nullptr)", __FILE__,
                       __LINE__, "SQL: " + sql_for_message(sql));
  }
}

void Database::busy_timeout(int milliseconds) {
  ATTN_SQLITE_CHECK(db_, sqlite3_busy_timeout(db_, milliseconds));
}

int64_t Database::last_insert_rowid() const {
  return sqlite3_last_insert_rowid(db_);
}

int64_t Database::changes() const {
  return sqlite3_changes64(db_);
}

bool Database::in_transaction() const {
  return sqlite3_get_autocommit(db_) == 0;
}

// --------------------------------------------------------------------------------- Statement

Statement::Statement(Database& db, std::string_view sql) : db_(db.handle()) {
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.data(), int(sql.size()), 0, &stmt_, &tail);
  if (rc != SQLITE_OK) {
    throw_sqlite_error(db_, rc, "sqlite3_prepare_v3(db, sql, size, 0, &stmt, &tail)", __FILE__,
                       __LINE__, "SQL: " + sql_for_message(std::string(sql)));
  }
  if (stmt_ == nullptr) {
    throw_sqlite_error(db_, SQLITE_MISUSE, "stmt != nullptr", __FILE__, __LINE__,
                       "no statement in SQL: " + sql_for_message(std::string(sql)));
  }
  std::string rest(tail, sql.data() + sql.size() - tail);
  if (!holds_no_statement(db_, rest)) {
    sqlite3_finalize(stmt_);
    stmt_ = nullptr;
    throw_sqlite_error(nullptr, SQLITE_MISUSE, "one statement per Statement", __FILE__, __LINE__,
                       "trailing SQL after the first statement: " + sql_for_message(rest));
  }
}

Statement::~Statement() {
  if (stmt_ != nullptr) sqlite3_finalize(stmt_);
}

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_),
      stmt_(std::exchange(other.stmt_, nullptr)),
      has_row_(std::exchange(other.has_row_, false)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    if (stmt_ != nullptr) sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
    has_row_ = std::exchange(other.has_row_, false);
  }
  return *this;
}

Statement& Statement::bind(int index, int64_t value) {
  ATTN_SQLITE_CHECK(db_, sqlite3_bind_int64(stmt_, index, value));
  return *this;
}

Statement& Statement::bind(int index, double value) {
  if (std::isnan(value)) return bind_null(index);
  ATTN_SQLITE_CHECK(db_, sqlite3_bind_double(stmt_, index, value));
  return *this;
}

Statement& Statement::bind(int index, std::string_view text) {
  // A null data pointer would bind NULL; an empty string must stay an empty TEXT.
  const char* data = text.data() != nullptr ? text.data() : "";
  ATTN_SQLITE_CHECK(
      db_, sqlite3_bind_text64(stmt_, index, data, text.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  return *this;
}

Statement& Statement::bind_blob(int index, const void* data, size_t size) {
  // As for text: a null pointer would bind NULL, so an empty blob gets a zero-length blob.
  if (size == 0) {
    ATTN_SQLITE_CHECK(db_, sqlite3_bind_zeroblob(stmt_, index, 0));
  } else {
    ATTN_SQLITE_CHECK(db_, sqlite3_bind_blob64(stmt_, index, data, size, SQLITE_TRANSIENT));
  }
  return *this;
}

Statement& Statement::bind_null(int index) {
  ATTN_SQLITE_CHECK(db_, sqlite3_bind_null(stmt_, index));
  return *this;
}

int Statement::parameter_index(const char* name) const {
  int index = sqlite3_bind_parameter_index(stmt_, name);
  if (index == 0) {
    throw_sqlite_error(
        nullptr, SQLITE_RANGE, "sqlite3_bind_parameter_index(stmt, name)", __FILE__, __LINE__,
        std::string("no parameter named '") + name + "' in SQL: " + sql_for_message(sql()));
  }
  return index;
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  has_row_ = rc == SQLITE_ROW;
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throw_sqlite_error(db_, rc, "sqlite3_step(stmt)", __FILE__, __LINE__,
                     "SQL: " + sql_for_message(sql()));
}

void Statement::run() {
  if (step()) {
    throw_sqlite_error(
        nullptr, SQLITE_MISUSE, "Statement::run()", __FILE__, __LINE__,
        "the statement returned a row; use step() to read it. SQL: " + sql_for_message(sql()));
  }
}

void Statement::reset() {
  has_row_ = false;
  sqlite3_reset(stmt_);
}

void Statement::clear_bindings() {
  ATTN_SQLITE_CHECK(db_, sqlite3_clear_bindings(stmt_));
}

int Statement::column_count() const {
  return sqlite3_column_count(stmt_);
}

std::string Statement::column_name(int column) const {
  const char* name = sqlite3_column_name(stmt_, column);
  return name != nullptr ? name : "";
}

void Statement::check_column(int column, const char* getter) const {
  if (!has_row_) {
    throw_sqlite_error(
        nullptr, SQLITE_MISUSE, getter, __FILE__, __LINE__,
        "no current row (step() did not return true). SQL: " + sql_for_message(sql()));
  }
  if (column < 0 || column >= column_count()) {
    throw_sqlite_error(nullptr, SQLITE_RANGE, getter, __FILE__, __LINE__,
                       "column " + std::to_string(column) + " out of range (the row has " +
                           std::to_string(column_count()) + "). SQL: " + sql_for_message(sql()));
  }
}

void Statement::throw_type_error(int column, const char* wanted) const {
  throw_sqlite_error(nullptr, SQLITE_MISMATCH, wanted, __FILE__, __LINE__,
                     "column " + std::to_string(column) + " ('" + column_name(column) + "') is " +
                         storage_class_name(sqlite3_column_type(stmt_, column)) +
                         ". SQL: " + sql_for_message(sql()));
}

int Statement::column_type(int column) const {
  check_column(column, "column_type");
  return sqlite3_column_type(stmt_, column);
}

int64_t Statement::column_int64(int column) const {
  if (column_type(column) != SQLITE_INTEGER) throw_type_error(column, "column_int64");
  return sqlite3_column_int64(stmt_, column);
}

double Statement::column_double(int column) const {
  int type = column_type(column);
  if (type != SQLITE_FLOAT && type != SQLITE_INTEGER) throw_type_error(column, "column_double");
  return sqlite3_column_double(stmt_, column);
}

std::string Statement::column_text(int column) const {
  if (column_type(column) != SQLITE_TEXT) throw_type_error(column, "column_text");
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  int size = sqlite3_column_bytes(stmt_, column);
  return std::string(reinterpret_cast<const char*>(text), size_t(size));
}

std::vector<uint8_t> Statement::column_blob(int column) const {
  if (column_type(column) != SQLITE_BLOB) throw_type_error(column, "column_blob");
  const auto* data = static_cast<const uint8_t*>(sqlite3_column_blob(stmt_, column));
  int size = sqlite3_column_bytes(stmt_, column);
  if (data == nullptr || size == 0) return {};
  return std::vector<uint8_t>(data, data + size);
}

std::optional<int64_t> Statement::column_optional_int64(int column) const {
  if (is_null(column)) return std::nullopt;
  return column_int64(column);
}

std::optional<double> Statement::column_optional_double(int column) const {
  if (is_null(column)) return std::nullopt;
  return column_double(column);
}

std::optional<std::string> Statement::column_optional_text(int column) const {
  if (is_null(column)) return std::nullopt;
  return column_text(column);
}

std::string Statement::sql() const {
  const char* text = stmt_ != nullptr ? sqlite3_sql(stmt_) : nullptr;
  return text != nullptr ? text : "";
}

// ------------------------------------------------------------------------------- Transaction

Transaction::Transaction(Database& db) : db_(db), nested_(db.in_transaction()) {
  db_.exec(nested_ ? "SAVEPOINT attn_nested" : "BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  // Some errors (SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM, ...) make SQLite roll back by itself;
  // then there is nothing left to roll back.
  if (!committed_ && db_.in_transaction()) {
    if (nested_) {
      sqlite3_exec(db_.handle(), "ROLLBACK TO attn_nested; RELEASE attn_nested", nullptr, nullptr,
                   nullptr);
    } else {
      sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
    }
  }
}

void Transaction::commit() {
  ATTN_ASSERT(!committed_, "Transaction::commit() called twice");
  db_.exec(nested_ ? "RELEASE attn_nested" : "COMMIT");
  committed_ = true;
}

// ------------------------------------------------------------------------------ integrity

std::vector<std::string> integrity_problems(Database& db, bool quick, size_t limit) {
  std::vector<std::string> problems;
  try {
    Statement check(db, quick ? "PRAGMA quick_check(" + std::to_string(limit) + ")"
                              : "PRAGMA integrity_check(" + std::to_string(limit) + ")");
    while (check.step()) {
      const std::string line = check.column_text(0);
      if (line != "ok") problems.push_back(line);
    }
  } catch (const CallError& e) {
    // SQLITE_CORRUPT or SQLITE_NOTADB before the check could list anything.
    problems.push_back(e.what());
  }
  if (problems.size() > limit) problems.resize(limit);
  return problems;
}

// ------------------------------------------------------------------------------------ backup

void copy_database(Database& from, Database& to) {
  sqlite3_backup* backup = sqlite3_backup_init(to.handle(), "main", from.handle(), "main");
  if (backup == nullptr) {
    // The error is on the destination connection.
    throw_sqlite_error(to.handle(), sqlite3_errcode(to.handle()),
                       "sqlite3_backup_init(to, \"main\", from, \"main\")", __FILE__, __LINE__,
                       "copying '" + from.path() + "' into '" + to.path() + "'");
  }
  const int rc = sqlite3_backup_step(backup, -1);  // every page in one step
  const int finish = sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) {
    throw_sqlite_error(to.handle(), rc, "sqlite3_backup_step(backup, -1)", __FILE__, __LINE__,
                       "copying '" + from.path() + "' into '" + to.path() + "'");
  }
  ATTN_SQLITE_CHECK(to.handle(), finish);
}

}  // namespace attn
