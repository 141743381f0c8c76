#include "tuner/winner.hpp"

#include <algorithm>

namespace attn {

std::optional<WinnerChoice> choose_winner(std::vector<Candidate> candidates, size_t challengers) {
  if (candidates.empty()) return std::nullopt;
  std::stable_sort(
      candidates.begin(), candidates.end(),
      [](const Candidate& a, const Candidate& b) { return a.median_us < b.median_us; });
  WinnerChoice choice;
  choice.winner = candidates.front();
  size_t tested = 0;
  for (size_t i = 1; i < candidates.size(); ++i) {
    const Comparison c = compare_samples(choice.winner.samples, candidates[i].samples);
    ++tested;
    if (c.verdict == Verdict::same) {
      choice.tied.push_back(candidates[i]);
      choice.tied_difference.push_back(c.relative_difference);
      continue;
    }
    if (!choice.closest_beaten) {
      choice.closest_beaten = candidates[i];
      choice.beaten_difference = c.relative_difference;
    }
    if (tested >= challengers) break;
  }
  return choice;
}

}  // namespace attn
