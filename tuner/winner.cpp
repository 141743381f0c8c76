#include "tuner/winner.hpp"

#include <algorithm>

#include "results/table.hpp"

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

std::string describe_choice(const WinnerChoice& w) {
  std::string text =
      w.winner.variant + " {" + w.winner.config_key + "} " + format("%.2f us", w.winner.median_us);
  for (size_t i = 0; i < w.tied.size(); ++i) {
    text += format("\n            tied: %s {%s} %+.2f%%", w.tied[i].variant.c_str(),
                   w.tied[i].config_key.c_str(), w.tied_difference[i] * 100);
  }
  if (w.closest_beaten) {
    text += format("\n            beats the closest challenger %s {%s} by %.2f%%",
                   w.closest_beaten->variant.c_str(), w.closest_beaten->config_key.c_str(),
                   w.beaten_difference * 100);
  }
  return text;
}

}  // namespace attn
