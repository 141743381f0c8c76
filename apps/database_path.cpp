#include "apps/database_path.hpp"

#include <cstdlib>
#include <filesystem>
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

}  // namespace attn
