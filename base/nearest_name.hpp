// "Did you mean ...?": the candidate closest to a misspelt word, by edit distance (Levenshtein),
// for unknown commands, flags, presets and keys.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace attn {

// Insertions, deletions and substitutions that turn `a` into `b`.
size_t edit_distance(const std::string& a, const std::string& b);

// The candidate nearest to `word`, when it is close: at most `max_distance` edits, or a candidate
// that starts with `word` (a prefix of at least 2 characters: "dec" for "decode-..."). Ties go to
// the first candidate. nullopt when none is close.
std::optional<std::string> nearest_name(const std::string& word,
                                        const std::vector<std::string>& candidates,
                                        size_t max_distance = 2);

}  // namespace attn
