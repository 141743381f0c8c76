// Which results database a command uses: --db PATH, else $ATTN_DB, else ./attn-bench.db. Both
// executables' commands that write or read results go through these.
#pragma once

#include <string>

#include "results/store.hpp"

namespace attn {

// The database a command writes (created when it does not exist).
std::string results_database_path(const std::string& flag);
// The same path for commands that only read (attn-tune compare, report): a file that
// does not exist is a usage error instead of a new, empty database.
std::string existing_database_path(const std::string& flag);

// What a command that only read a database (db info, export, compare, report: they open it with
// StoreAccess::read_only) says about how it read it: empty, or that it was read as immutable
// because its folder cannot be written, and how many bytes of its -wal file were not read.
std::string read_only_note(const StoreOpening& opening);
// The note on stderr ("attn-tune: note: ..."), only when changes in the -wal file were not read:
// the one case where what a command shows may lack committed results.
void warn_of_unread_changes(const StoreOpening& opening);

}  // namespace attn
