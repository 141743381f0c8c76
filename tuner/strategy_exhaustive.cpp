// Exhaustive: every config once, at the confirm fidelity. The baseline the others are judged by.
#include <set>

#include "tuner/strategy.hpp"

namespace attn {

namespace {

class ExhaustiveStrategy : public Strategy {
 public:
  explicit ExhaustiveStrategy(size_t size) : size_(size) {}
  std::string name() const override { return "exhaustive"; }
  std::vector<Trial> propose(const std::vector<Outcome>& history) override {
    std::set<size_t> seen;
    for (const Outcome& o : history) seen.insert(o.trial.config);
    std::vector<Trial> out;
    for (size_t i = 0; i < size_; ++i) {
      if (!seen.count(i)) out.push_back({i, 0});
    }
    return out;
  }

 private:
  size_t size_;
};

}  // namespace

std::unique_ptr<Strategy> make_exhaustive_strategy(const SpacePoints& space) {
  return std::make_unique<ExhaustiveStrategy>(space.size());
}

}  // namespace attn
