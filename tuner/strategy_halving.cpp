// Successive halving with racing. Rung 0 measures every config cheaply (screen); each later rung
// measures, more strictly, the best 1/eta of the rung below and also any config whose median
// interval still overlaps the leader's (it can still win), up to twice the quota. The state is
// recomputed from the history on every call, so a resumed sweep picks up where it stopped.
#include <algorithm>
#include <cmath>
#include <map>

#include "base/sample_statistics.hpp"
#include "tuner/strategy.hpp"

namespace attn {

namespace {

class HalvingStrategy : public Strategy {
 public:
  HalvingStrategy(size_t size, HalvingOptions options) : size_(size), options_(options) {}
  std::string name() const override { return "halving"; }
  int rungs() const override { return options_.rungs; }

  std::vector<Trial> propose(const std::vector<Outcome>& history) override {
    std::vector<size_t> candidates(size_);
    for (size_t i = 0; i < size_; ++i) candidates[i] = i;
    for (int rung = 0; rung < options_.rungs; ++rung) {
      std::map<size_t, const Outcome*> done;
      for (const Outcome& o : history) {
        if (o.trial.rung == rung) done[o.trial.config] = &o;
      }
      std::vector<Trial> missing;
      for (size_t c : candidates) {
        if (!done.count(c)) missing.push_back({c, rung});
      }
      if (!missing.empty()) return missing;
      candidates = promote(candidates, done);
      if (candidates.empty()) break;
    }
    return {};
  }

 private:
  std::vector<size_t> promote(const std::vector<size_t>& candidates,
                              const std::map<size_t, const Outcome*>& done) const {
    std::vector<const Outcome*> ok;
    for (size_t c : candidates) {
      const Outcome* o = done.at(c);
      if (o->ok) ok.push_back(o);
    }
    std::stable_sort(ok.begin(), ok.end(), [](const Outcome* a, const Outcome* b) {
      return a->median_us < b->median_us;
    });
    const size_t quota = std::min(
        ok.size(),
        std::max(options_.min_keep, size_t(std::ceil(double(candidates.size()) / options_.eta))));
    std::vector<size_t> out;
    for (size_t i = 0; i < quota; ++i) out.push_back(ok[i]->trial.config);
    if (ok.empty()) return out;
    // Racing: a config the leader has not beaten beyond its noise stays in the race.
    const Interval leader = median_interval(ok.front()->samples);
    for (size_t i = quota; i < ok.size() && out.size() < 2 * quota; ++i) {
      if (median_interval(ok[i]->samples).overlaps(leader)) out.push_back(ok[i]->trial.config);
    }
    return out;
  }

  size_t size_;
  HalvingOptions options_;
};

}  // namespace

std::unique_ptr<Strategy> make_halving_strategy(const SpacePoints& space, HalvingOptions options) {
  return std::make_unique<HalvingStrategy>(space.size(), options);
}

}  // namespace attn
