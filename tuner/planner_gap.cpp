#include "tuner/planner_gap.hpp"

#include <algorithm>

#include "results/table.hpp"

namespace attn {

std::optional<PlannerGap> planner_gap(const StoredMedians& medians, const std::string& variant,
                                      const std::string& planner_key, const Candidate& winner) {
  for (const char* policy : {"confirm", "screen"}) {
    const auto planner = medians.find({variant, planner_key, policy});
    const auto best = medians.find({winner.variant, winner.config_key, policy});
    if (planner == medians.end() || best == medians.end() || best->second <= 0) continue;
    return PlannerGap{variant, planner_key, policy, planner->second, best->second};
  }
  return std::nullopt;
}

std::optional<PlannerGap> nearest_planner(const std::vector<PlannerGap>& gaps) {
  if (gaps.empty()) return std::nullopt;
  return *std::min_element(gaps.begin(), gaps.end(), [](const PlannerGap& a, const PlannerGap& b) {
    return a.gap() < b.gap();
  });
}

std::string describe_planner_gap(const PlannerGap& gap) {
  const double percent = 100 * gap.gap();
  const std::string behind = percent >= 0.05 ? format("%.1f%% behind the winner", percent)
                             : percent > -0.05
                                 ? std::string("as fast as the winner")
                                 : format("%.1f%% ahead of the winner (noise)", -percent);
  return "{" + gap.config_key + "} " + format("%.2f us", gap.planner_us) + ", " + behind + " (" +
         gap.policy + ")";
}

std::string planner_gap_cell(const PlannerGap& gap) {
  return gap.variant + " " + format("%+.1f%%", 100 * gap.gap()) + " (" + gap.policy + ")";
}

}  // namespace attn
