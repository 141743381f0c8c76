#include "measure/phase_deadlines.hpp"

#include <cmath>
#include <cstdlib>
#include <set>

#include "base/errors.hpp"
#include "results/table.hpp"

namespace attn {

std::string to_string(EvalPhase phase) {
  switch (phase) {
    case EvalPhase::compile:
      return "compile";
    case EvalPhase::verify:
      return "verify";
    case EvalPhase::measure:
      return "measure";
  }
  return "?";
}

std::optional<EvalPhase> eval_phase_from_string(const std::string& text) {
  for (EvalPhase p : {EvalPhase::compile, EvalPhase::verify, EvalPhase::measure}) {
    if (to_string(p) == text) return p;
  }
  return std::nullopt;
}

double PhaseDeadlines::of(EvalPhase phase) const {
  return phase_member(*this, phase);
}

std::string PhaseDeadlines::describe() const {
  return format("compile %gs, verify %gs, measure %gs", compile, verify, measure);
}

PhaseDeadlines parse_phase_deadlines(const std::string& text, PhaseDeadlines base) {
  PhaseDeadlines out = base;
  std::set<std::string> seen;
  size_t start = 0;
  if (text.empty())
    throw UsageError("--deadline: expected phase=seconds,... (compile, verify, measure)");
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string entry = text.substr(start, end - start);
    start = end + 1;
    const size_t eq = entry.find('=');
    if (eq == std::string::npos) {
      throw UsageError("--deadline '" + entry +
                       "': expected phase=seconds (compile, verify, measure)");
    }
    const std::string name = entry.substr(0, eq);
    const std::optional<EvalPhase> phase = eval_phase_from_string(name);
    if (!phase) {
      throw UsageError("--deadline '" + entry + "': unknown phase '" + name +
                       "' (compile, verify, measure)");
    }
    if (!seen.insert(name).second) throw UsageError("--deadline: phase '" + name + "' given twice");
    const std::string value = entry.substr(eq + 1);
    char* rest = nullptr;
    const double seconds = std::strtod(value.c_str(), &rest);
    if (value.empty() || *rest != '\0' || !std::isfinite(seconds) || seconds <= 0) {
      throw UsageError("--deadline '" + entry + "': seconds must be a number > 0");
    }
    (*phase == EvalPhase::compile  ? out.compile
     : *phase == EvalPhase::verify ? out.verify
                                   : out.measure) = seconds;
  }
  return out;
}

}  // namespace attn
