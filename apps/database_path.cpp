#include "apps/database_path.hpp"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <system_error>

#include "base/errors.hpp"

namespace attn {

std::string results_database_path(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("ATTN_DB"); env && *env) return env;
  return "attn-bench.db";
}

std::string existing_database_path(const std::string& flag) {
  const std::string path = results_database_path(flag);
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    throw UsageError("'" + path + "': no such results database (--db PATH, or $ATTN_DB)");
  }
  return path;
}

std::string read_only_note(const StoreOpening& opening) {
  if (!opening.immutable) return "";
  std::string note =
      "read as an immutable file: its folder cannot be written, so SQLite could not create the "
      "-shm file a reader of a WAL database needs; changes another process makes meanwhile are "
      "not seen";
  if (opening.unread_wal_bytes > 0) {
    note += "; its -wal file holds " + std::to_string(opening.unread_wal_bytes) +
            " bytes of changes not yet in the database file, which are not shown (open it where "
            "the folder can be written to see them)";
  }
  return note;
}

void warn_of_unread_changes(const StoreOpening& opening) {
  if (opening.immutable && opening.unread_wal_bytes > 0) {
    std::cerr << "attn-tune: note: '" << opening.path << "' was " << read_only_note(opening)
              << "\n";
  }
}

}  // namespace attn
