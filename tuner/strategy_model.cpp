// Model-based search. The model predicts log-time: an additive term per axis value (fit by
// backfitting with shrinkage towards zero, so an unseen value predicts the mean) plus the weighted
// mean residual of the nearest measured configs over rank-normalised axes (which carries the
// interactions the additive part misses). Priors from other workloads or devices enter the fit
// with a lower weight. Each batch holds the configs with the lowest predicted time and one
// exploration pick (the config farthest from everything measured). Like the others it is a pure
// function of the history, so a resumed sweep proposes what the interrupted one would have.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "tuner/strategy.hpp"

namespace attn {

namespace {

constexpr size_t kNeighbours = 4;
constexpr int kBackfitRounds = 6;
constexpr double kShrinkage = 1.0;

class ModelStrategy : public Strategy {
 public:
  ModelStrategy(const SpacePoints& space, ModelOptions options)
      : options_(std::move(options)), coords_(space.size()), levels_(space.axes.size()) {
    const size_t axes = space.axes.size();
    level_of_.assign(space.size(), std::vector<size_t>(axes));
    for (size_t a = 0; a < axes; ++a) {
      std::set<int64_t> values;
      for (const auto& p : space.points) values.insert(p[a]);
      const std::vector<int64_t> sorted(values.begin(), values.end());
      for (size_t i = 0; i < space.size(); ++i) {
        const size_t rank = size_t(
            std::lower_bound(sorted.begin(), sorted.end(), space.points[i][a]) - sorted.begin());
        level_of_[i][a] = rank;
        coords_[i].push_back(sorted.size() > 1 ? double(rank) / double(sorted.size() - 1) : 0.0);
      }
      levels_[a] = sorted.size();
    }
    if (options_.initial == 0) {
      options_.initial = std::max(2 * axes + 2, size_t(std::ceil(0.03 * double(space.size()))));
    }
    options_.initial = std::min(options_.initial, space.size());
    design_ = initial_design(space.size());
  }

  std::string name() const override { return "model"; }

  std::vector<Trial> propose(const std::vector<Outcome>& history) override {
    std::set<size_t> seen;
    for (const Outcome& o : history) seen.insert(o.trial.config);
    std::vector<Trial> out;
    for (size_t c : design_) {
      if (!seen.count(c)) out.push_back({c, 0});
    }
    if (!out.empty()) return out;
    if (seen.size() >= coords_.size() || stalled(history)) return {};

    const Fit fit = fit_model(history);
    std::vector<std::pair<double, size_t>> ranked;
    for (size_t c = 0; c < coords_.size(); ++c) {
      if (!seen.count(c)) ranked.emplace_back(predict(fit, c), c);
    }
    std::stable_sort(ranked.begin(), ranked.end());
    const size_t exploit = options_.batch > 1 ? options_.batch - 1 : 1;
    std::set<size_t> picked;
    for (size_t i = 0; i < ranked.size() && picked.size() < exploit; ++i) {
      picked.insert(ranked[i].second);
      out.push_back({ranked[i].second, 0});
    }
    // Exploration: the unmeasured config farthest from any measured one.
    double farthest = -1;
    size_t explore = coords_.size();
    for (const auto& [prediction, c] : ranked) {
      if (picked.count(c)) continue;
      double nearest = std::numeric_limits<double>::infinity();
      for (size_t m : seen) nearest = std::min(nearest, distance(c, m));
      if (nearest > farthest) {
        farthest = nearest;
        explore = c;
      }
    }
    if (options_.batch > 1 && explore < coords_.size()) out.push_back({explore, 0});
    return out;
  }

 private:
  struct Point {
    size_t config;
    double y, w;
  };
  struct Fit {
    double mean = 0;
    std::vector<std::vector<double>> effect;  // [axis][level]
    std::vector<Point> data;
    std::vector<double> residual;  // per data point
  };

  std::vector<size_t> initial_design(size_t size) const {
    std::vector<size_t> order(size);
    std::iota(order.begin(), order.end(), size_t(0));
    std::mt19937_64 rng(options_.seed);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<size_t> design;
    if (!options_.priors.empty()) {
      // Half the design from the configs the priors rank best.
      std::map<size_t, std::pair<double, double>> sums;  // config -> (sum, count)
      for (const PriorObservation& p : options_.priors) {
        if (p.config >= size) continue;
        sums[p.config].first += p.log_time;
        sums[p.config].second += 1;
      }
      std::vector<std::pair<double, size_t>> best;
      for (const auto& [c, s] : sums) best.emplace_back(s.first / s.second, c);
      std::stable_sort(best.begin(), best.end());
      for (size_t i = 0; i < best.size() && design.size() < options_.initial / 2; ++i) {
        design.push_back(best[i].second);
      }
    }
    for (size_t c : order) {
      if (design.size() >= options_.initial) break;
      if (std::find(design.begin(), design.end(), c) == design.end()) design.push_back(c);
    }
    return design;
  }

  double distance(size_t a, size_t b) const {
    double d = 0;
    for (size_t i = 0; i < coords_[a].size(); ++i) {
      const double x = coords_[a][i] - coords_[b][i];
      d += x * x;
    }
    return std::sqrt(d);
  }

  // True when the last `patience` batches after the initial design did not improve the best by
  // more than min_gain.
  bool stalled(const std::vector<Outcome>& history) const {
    double best = std::numeric_limits<double>::infinity();
    size_t count = 0, since_gain = 0;
    size_t in_batch = 0;
    double best_before_batch = best;
    for (const Outcome& o : history) {
      if (o.ok) best = std::min(best, o.median_us);
      if (++count <= options_.initial) {
        best_before_batch = best;
        continue;
      }
      if (++in_batch == options_.batch) {
        const bool gained = best < best_before_batch * (1 - options_.min_gain);
        since_gain = gained ? 0 : since_gain + 1;
        best_before_batch = best;
        in_batch = 0;
      }
    }
    return since_gain >= options_.patience;
  }

  Fit fit_model(const std::vector<Outcome>& history) const {
    Fit fit;
    double own_sum = 0, own_n = 0;
    for (const Outcome& o : history) {
      if (!o.ok || o.median_us <= 0) continue;
      fit.data.push_back({o.trial.config, std::log(o.median_us), 1.0});
      own_sum += fit.data.back().y;
      own_n += 1;
    }
    // Own outcomes centred like the priors, so both describe the shape only.
    for (Point& p : fit.data) p.y -= own_sum / std::max(1.0, own_n);
    for (const PriorObservation& p : options_.priors) {
      if (p.config < coords_.size())
        fit.data.push_back({p.config, p.log_time, options_.prior_weight});
    }
    double wsum = 0;
    for (const Point& p : fit.data) {
      fit.mean += p.w * p.y;
      wsum += p.w;
    }
    fit.mean = wsum > 0 ? fit.mean / wsum : 0;
    fit.effect.resize(levels_.size());
    for (size_t a = 0; a < levels_.size(); ++a) fit.effect[a].assign(levels_[a], 0.0);
    for (int round = 0; round < kBackfitRounds; ++round) {
      for (size_t a = 0; a < levels_.size(); ++a) {
        std::vector<double> sum(levels_[a], 0.0), weight(levels_[a], 0.0);
        for (const Point& p : fit.data) {
          double partial = p.y - fit.mean;
          for (size_t b = 0; b < levels_.size(); ++b) {
            if (b != a) partial -= fit.effect[b][level_of_[p.config][b]];
          }
          sum[level_of_[p.config][a]] += p.w * partial;
          weight[level_of_[p.config][a]] += p.w;
        }
        for (size_t l = 0; l < levels_[a]; ++l)
          fit.effect[a][l] = sum[l] / (weight[l] + kShrinkage);
      }
    }
    for (const Point& p : fit.data) fit.residual.push_back(p.y - additive(fit, p.config));
    return fit;
  }

  double additive(const Fit& fit, size_t c) const {
    double y = fit.mean;
    for (size_t a = 0; a < levels_.size(); ++a) y += fit.effect[a][level_of_[c][a]];
    return y;
  }

  double predict(const Fit& fit, size_t c) const {
    std::vector<std::pair<double, size_t>> near;
    for (size_t i = 0; i < fit.data.size(); ++i)
      near.emplace_back(distance(c, fit.data[i].config), i);
    const size_t k = std::min(kNeighbours, near.size());
    std::partial_sort(near.begin(), near.begin() + long(k), near.end());
    double sum = 0, weight = 0;
    for (size_t j = 0; j < k; ++j) {
      const double w = fit.data[near[j].second].w / (near[j].first + 0.05);
      sum += w * fit.residual[near[j].second];
      weight += w;
    }
    return additive(fit, c) + (weight > 0 ? sum / weight : 0);
  }

  ModelOptions options_;
  std::vector<std::vector<double>> coords_;    // [config][axis] in [0, 1]
  std::vector<std::vector<size_t>> level_of_;  // [config][axis]: rank of the value
  std::vector<size_t> levels_;                 // [axis]: distinct values
  std::vector<size_t> design_;
};

}  // namespace

std::unique_ptr<Strategy> make_model_strategy(const SpacePoints& space, ModelOptions options) {
  return std::make_unique<ModelStrategy>(space, std::move(options));
}

}  // namespace attn
