// The older names of renamed variants. Variant names follow one scheme,
// <family>.<arch>_<instruction>[_<what differs>] (docs/architecture.md, "Names"); databases written
// before it hold the older names. Those are printed as stored, and matched through this table
// wherever a name is looked up, filtered by a glob or paired with another (the registry, --variant,
// compare, export, report).
#pragma once

#include <string>
#include <vector>

namespace attn {

// An older name of a variant and the name it goes by today.
struct VariantAlias {
  const char* old_name;
  const char* current_name;
};

// Every renamed variant; no current name is anyone's old name.
const std::vector<VariantAlias>& variant_aliases();

// The name `variant` goes by today: the current name for an old one, else `variant` itself.
std::string current_variant_name(const std::string& variant);

// Every name `variant` has had, the current one first (just `variant` when never renamed).
std::vector<std::string> variant_name_forms(const std::string& variant);

// Whether `glob` (base/glob.hpp) matches `variant` under any of its names: a filter written with
// an old name finds today's variant, and one written with today's name finds rows stored under the
// old one.
bool variant_glob_match(const std::string& glob, const std::string& variant);

}  // namespace attn
