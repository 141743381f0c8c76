// Winner selection: the candidate with the lowest median, tested against its closest challengers
// with the distribution-free median intervals of compare_samples (base/sample_statistics.hpp).
// A challenger whose interval overlaps the winner's cannot be told apart from it: it is tied.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/sample_statistics.hpp"

namespace attn {

struct Candidate {
  std::string variant, config_key;
  int64_t measurement_id = 0;
  std::vector<double> samples;  // kept samples, microseconds
  double median_us = 0;
};

struct WinnerChoice {
  Candidate winner;
  std::vector<Candidate> tied;              // challengers the test cannot separate from the winner
  std::vector<double> tied_difference;      // their (median - winner's) / winner's
  std::optional<Candidate> closest_beaten;  // the fastest challenger the winner beat
  double beaten_difference = 0;
};

// nullopt when there is no candidate. The `challengers` candidates with the next lowest medians are
// tested (and any further one while the previous was tied).
std::optional<WinnerChoice> choose_winner(std::vector<Candidate> candidates,
                                          size_t challengers = 4);

// "<variant> {<config>} 12.34 us", then a line per tied config and the closest beaten one, as
// `attn-tune tune` and `attn-tune merge --winners` print a winner.
std::string describe_choice(const WinnerChoice& choice);

}  // namespace attn
