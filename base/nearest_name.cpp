#include "base/nearest_name.hpp"

#include <algorithm>

namespace attn {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> nearest_name(const std::string& word,
                                        const std::vector<std::string>& candidates,
                                        size_t max_distance) {
  std::optional<std::string> best;
  size_t best_distance = max_distance + 1;
  for (const std::string& candidate : candidates) {
    // Lengths further apart than the limit are further apart in edits: no need to compute.
    const size_t gap = candidate.size() > word.size() ? candidate.size() - word.size()
                                                      : word.size() - candidate.size();
    if (gap > max_distance) continue;
    const size_t distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  if (best || word.size() < 2) return best;
  for (const std::string& candidate : candidates) {
    if (candidate.size() > word.size() && candidate.compare(0, word.size(), word) == 0) {
      return candidate;
    }
  }
  return std::nullopt;
}

}  // namespace attn
