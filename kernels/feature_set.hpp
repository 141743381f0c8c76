// FeatureSet: what a variant declares it implements, as an allow-list over the features a batch
// reports (workloads/batch_features.hpp). check_features() declines a batch for every feature it
// uses that the set does not hold, naming them all; a feature the set never heard of (a new
// workload field) is therefore declined, never ignored.
//
//   FeatureSet()
//       .with(feature::kQueries, {"decode"})
//       .with(feature::kKvLayout, {"nhd", "hnd"})
//       .with(feature::kHeadDim, {64, 128, 256})
//       .with_range(feature::kPageSize, 1, 256)
//       .with(feature::kSlidingWindow);
//
// Names and values are the schema's (feature_schema()); a CPU test checks every declaration
// against it, so a misspelt name is caught rather than quietly declining everything.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kernels/support.hpp"
#include "workloads/batch_features.hpp"

namespace attn {

class FeatureSet {
 public:
  // A flag feature.
  FeatureSet& with(const std::string& name);
  // A choice feature's values (replacing any declared before).
  FeatureSet& with(const std::string& name, std::initializer_list<const char*> values);
  FeatureSet& with(const std::string& name, const std::vector<std::string>& values);
  // A number feature's values, listed (replacing any declared before).
  FeatureSet& with(const std::string& name, std::initializer_list<int> numbers);
  FeatureSet& with_numbers(const std::string& name, const std::vector<int64_t>& numbers);
  // A number feature's values from min to max inclusive (replacing any declared before).
  FeatureSet& with_range(const std::string& name, int64_t min, int64_t max);
  // Drops a feature, or one value of a choice feature.
  FeatureSet& without(const std::string& name);
  FeatureSet& without(const std::string& name, const std::string& value);

  // Where a batch that uses the feature (any value it does not declare, or this one) is run
  // instead, for the message: "paged_decode.sm80_mma reads fp8 pools".
  FeatureSet& note(const std::string& name, std::string text);
  FeatureSet& note(const std::string& name, const std::string& value, std::string text);

  bool implements(const FeatureUse& use) const;
  // The note for a use this set does not implement, or "".
  std::string note_for(const FeatureUse& use) const;
  bool has(const std::string& name) const { return declared_.count(name) != 0; }

  // What is declared, for listing and for the schema tests: a flag as (name, ""), a choice as
  // one (name, value) per value, a number as (name, "min..max") per range.
  std::vector<std::pair<std::string, std::string>> entries() const;

 private:
  struct Declared {
    std::vector<std::string> choices;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    bool flag = false;
  };
  std::map<std::string, Declared> declared_;
  std::map<std::pair<std::string, std::string>, std::string> notes_;  // (name, value or "")
};

// Yes when `implemented` holds every feature `used` names; otherwise no, naming every one it
// does not, then the notes: "does not implement: sliding window, fp8 KV cache (per-head scales)
// (prefix_prefill.sm80_mma runs windows; prefix_prefill.sm80_mma reads fp8 caches)".
Support check_features(const FeatureSet& implemented, const BatchFeatures& used);

}  // namespace attn
