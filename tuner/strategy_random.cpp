// Random: a seeded permutation of the space, proposed in small batches so that a budget of trials
// or seconds ends it at a uniformly random subset.
#include <numeric>
#include <random>
#include <set>

#include "tuner/strategy.hpp"

namespace attn {

namespace {

constexpr size_t kBatch = 8;

class RandomStrategy : public Strategy {
 public:
  RandomStrategy(size_t size, uint64_t seed) : order_(size) {
    std::iota(order_.begin(), order_.end(), size_t(0));
    std::mt19937_64 rng(seed);
    std::shuffle(order_.begin(), order_.end(), rng);
  }
  std::string name() const override { return "random"; }
  std::vector<Trial> propose(const std::vector<Outcome>& history) override {
    std::set<size_t> seen;
    for (const Outcome& o : history) seen.insert(o.trial.config);
    std::vector<Trial> out;
    for (size_t i : order_) {
      if (out.size() == kBatch) break;
      if (!seen.count(i)) out.push_back({i, 0});
    }
    return out;
  }

 private:
  std::vector<size_t> order_;
};

}  // namespace

std::unique_ptr<Strategy> make_random_strategy(const SpacePoints& space, uint64_t seed) {
  return std::make_unique<RandomStrategy>(space.size(), seed);
}

}  // namespace attn
