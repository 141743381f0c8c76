// Which results database a command uses: --db PATH, else $ATTN_DB, else ./attn-bench.db. Both
// executables' commands that write or read results go through these.
#pragma once

#include <string>

namespace attn {

// The database a command writes (created when it does not exist).
std::string results_database_path(const std::string& flag);
// The same path for commands that only read (attn-tune compare, report): a file that
// does not exist is a usage error instead of a new, empty database.
std::string existing_database_path(const std::string& flag);

}  // namespace attn
