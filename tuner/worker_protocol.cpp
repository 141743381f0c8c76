#include "tuner/worker_protocol.hpp"

#include "base/errors.hpp"

namespace attn {

namespace {

using nlohmann::json;

template <typename T>
void read(const json& j, const char* key, T& value) {
  auto it = j.find(key);
  if (it == j.end()) throw InputError("worker request", {std::string("/") + key + ": missing"});
  try {
    value = it->get<T>();
  } catch (const json::exception& e) {
    throw InputError("worker request", {std::string("/") + key + ": " + e.what()});
  }
}

}  // namespace

nlohmann::json policy_to_json(const MeasurePolicy& p) {
  return json{{"name", p.name},
              {"min_samples", p.min_samples},
              {"max_samples", p.max_samples},
              {"noise", p.noise},
              {"max_seconds", p.max_seconds},
              {"warmup_min", p.warmup_min},
              {"warmup_window", p.warmup_window},
              {"warmup_tolerance", p.warmup_tolerance},
              {"warmup_max_seconds", p.warmup_max_seconds},
              {"timer", to_string(p.timer)},
              {"graph_below_us", p.graph_below_us},
              {"graph_sample_us", p.graph_sample_us},
              {"flush_l2", p.flush_l2},
              {"probe_clocks", p.probe_clocks},
              {"clock_threshold", p.clock_threshold},
              {"unstable_discard_fraction", p.unstable_discard_fraction}};
}

MeasurePolicy policy_from_json(const nlohmann::json& j) {
  MeasurePolicy p;
  read(j, "name", p.name);
  read(j, "min_samples", p.min_samples);
  read(j, "max_samples", p.max_samples);
  read(j, "noise", p.noise);
  read(j, "max_seconds", p.max_seconds);
  read(j, "warmup_min", p.warmup_min);
  read(j, "warmup_window", p.warmup_window);
  read(j, "warmup_tolerance", p.warmup_tolerance);
  read(j, "warmup_max_seconds", p.warmup_max_seconds);
  std::string timer;
  read(j, "timer", timer);
  const auto mode = timer_mode_from_string(timer);
  if (!mode) throw InputError("worker request", {"/policy/timer: unknown '" + timer + "'"});
  p.timer = *mode;
  read(j, "graph_below_us", p.graph_below_us);
  read(j, "graph_sample_us", p.graph_sample_us);
  read(j, "flush_l2", p.flush_l2);
  read(j, "probe_clocks", p.probe_clocks);
  read(j, "clock_threshold", p.clock_threshold);
  read(j, "unstable_discard_fraction", p.unstable_discard_fraction);
  return p;
}

std::string encode_request(const WorkerRequest& r) {
  return json{
      {"variant", r.variant}, {"config", r.config_key}, {"policy", policy_to_json(r.policy)}}
      .dump();
}

WorkerRequest decode_request(const std::string& line) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::exception& e) {
    throw InputError("worker request", {std::string("not JSON: ") + e.what()});
  }
  if (!j.is_object()) throw InputError("worker request", {"/: not an object"});
  WorkerRequest r;
  read(j, "variant", r.variant);
  read(j, "config", r.config_key);
  json policy;
  read(j, "policy", policy);
  r.policy = policy_from_json(policy);
  return r;
}

std::string encode_phase(EvalPhase phase) {
  return json{{"phase", to_string(phase)}}.dump();
}

std::optional<EvalPhase> decode_phase(const nlohmann::json& line) {
  auto it = line.find("phase");
  if (it == line.end() || !it->is_string()) return std::nullopt;
  return eval_phase_from_string(it->get<std::string>());
}

}  // namespace attn
