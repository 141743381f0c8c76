// Synthetic but realistic tuning landscapes for the strategy and sweep tests: the axes of
// paged_decode.sm80_simt, a smooth bowl in log2 of each axis with interactions between tile size
// and warps and between heads and splits, a few percent of config-specific roughness, and some
// configs that fail (as a real space has configs that do not compile or are wrong).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "base/kernel_config.hpp"
#include "tuner/replay_evaluator.hpp"

namespace attn::testing {

inline std::vector<KernelConfig> sm80_simt_like_configs() {
  std::vector<KernelConfig> out;
  for (int64_t tile : {16, 32, 64, 128})
    for (int64_t stages : {2, 3, 4, 6})
      for (int64_t warps : {1, 2, 4, 8})
        for (int64_t heads : {1, 2, 4, 8, 16})
          for (int64_t splits : {0, 1, 2, 4, 8, 16, 32}) {
            out.push_back(KernelConfig{{"tile_tokens", tile},
                                       {"stages", stages},
                                       {"warps", warps},
                                       {"heads_per_cta", heads},
                                       {"num_splits", splits}});
          }
  return out;
}

inline double hash_unit(uint64_t x) {  // deterministic in [0, 1)
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return double((x ^ (x >> 31)) >> 11) / 9007199254740992.0;
}

// The landscape: true microseconds per config (about 200 us at the best), `failing` of them failed.
inline std::vector<ReplayCase> sm80_simt_like_landscape(const std::vector<KernelConfig>& configs,
                                                        uint64_t seed, double noise = 0.025,
                                                        double failing = 0.04) {
  std::vector<ReplayCase> cases;
  for (size_t i = 0; i < configs.size(); ++i) {
    const KernelConfig& c = configs[i];
    const double t = std::log2(double(c.get("tile_tokens"))) - 6;       // best 64
    const double s = double(c.get("stages")) - 3.5;                     // best 3..4
    const double w = std::log2(double(c.get("warps"))) - 2;             // best 4
    const double h = std::log2(double(c.get("heads_per_cta"))) - 2;     // best 4 (GQA 4)
    const double k = std::log2(double(c.get("num_splits")) + 1) - 2.3;  // best about 4
    const double bowl = 0.12 * t * t + 0.03 * s * s + 0.10 * w * w + 0.07 * h * h + 0.05 * k * k +
                        0.06 * t * w + 0.03 * h * k;
    const double rough = 0.04 * (hash_unit(seed * 7919 + i) - 0.5);
    ReplayCase r;
    r.true_us = 200 * std::exp(bowl + rough);
    r.noise = noise;
    r.ok = hash_unit(seed * 104729 + i + 1) >= failing;
    cases.push_back(r);
  }
  return cases;
}

}  // namespace attn::testing

namespace attn::testing {
inline uint64_t fnv(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  return h;
}
}  // namespace attn::testing
