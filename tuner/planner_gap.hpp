// How far the planner's config of a variant (its default for the batch: what `attn-bench run`
// measures without --config) ran behind a sweep's winner, from the results the sweep stored.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "tuner/winner.hpp"

namespace attn {

// The latest passed median of each (variant, config key, policy) a sweep stored, microseconds.
using StoredMedians = std::map<std::tuple<std::string, std::string, std::string>, double>;

struct PlannerGap {
  std::string variant, config_key;
  std::string policy;     // of both results compared
  double planner_us = 0;  // the planner's config
  double winner_us = 0;   // the winner's config, under the same policy
  double gap() const { return planner_us / winner_us - 1; }
};

// The planner's config `planner_key` of `variant` against `winner`: both `confirm` results where
// both have one, else both `screen` results (halving screens every config and confirms only the
// best); nullopt where the two have no policy in common (the planner's config was not in the
// space searched, or failed).
std::optional<PlannerGap> planner_gap(const StoredMedians& medians, const std::string& variant,
                                      const std::string& planner_key, const Candidate& winner);

// The smallest gap of `gaps` (the variant whose planner's config came nearest the winner): what
// `attn-bench run` gets, the fastest of the variants' planner configs.
std::optional<PlannerGap> nearest_planner(const std::vector<PlannerGap>& gaps);

// "{config} 268.50 us, 1.4% behind the winner (confirm)"; "as fast as the winner" within 0.05%.
std::string describe_planner_gap(const PlannerGap& gap);
// The same in a table cell: "sm90_tma +1.4% (confirm)".
std::string planner_gap_cell(const PlannerGap& gap);

}  // namespace attn
