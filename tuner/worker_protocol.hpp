// The line-delimited JSON protocol between `attn-tune tune --isolate workers` and its evaluation
// workers (`attn-tune worker`, apps/cmd_tune_worker.cpp). One JSON object per line, each way:
//
//   worker -> orchestrator, once set up:   {"ready": true, "backend": "cpu"}
//   orchestrator -> worker, per case:      {"variant": "...", "config": "a=1,b=2", "policy": {...}}
//   worker -> orchestrator, during a case: {"phase": "compile"}, then "verify", then "measure"
//                                          (each phase's deadline runs from its line)
//   worker -> orchestrator, per case:      {"measurement": {...}}   (results/measurement_json.hpp)
//                                      or  {"measurement": {...}, "sticky": "why"}  (a sticky CUDA
//                                          error lost the worker's context: it must be replaced)
//                                      or  {"error": "what"}        (an exception, not a
//                                      disposition)
//
// The workload and device are the worker's command line, fixed for its life. The orchestrator
// closing its end is the worker's signal to exit.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "measure/phase_deadlines.hpp"
#include "measure/timing_policy.hpp"

namespace attn {

struct WorkerRequest {
  std::string variant;     // registry name, "paged_decode.sm80_simt"
  std::string config_key;  // KernelConfig::key()
  MeasurePolicy policy;
};

nlohmann::json policy_to_json(const MeasurePolicy& policy);
MeasurePolicy policy_from_json(const nlohmann::json& j);  // throws InputError

std::string encode_request(const WorkerRequest& request);  // one line, no newline
WorkerRequest decode_request(const std::string& line);     // throws InputError

std::string encode_phase(EvalPhase phase);  // {"phase": "verify"}
// The phase a worker's line announces, or nullopt when the line is not a phase line.
std::optional<EvalPhase> decode_phase(const nlohmann::json& line);

}  // namespace attn
