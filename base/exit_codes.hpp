// Exit codes of attn-bench and attn-tune. The table is documented in docs/exit-codes.md; keep both
// in step.
#pragma once

namespace attn {

enum class ExitCode : int {
  ok = 0,             // everything asked for ran and every verified case passed
  internal = 1,       // a bug in attn-bench (an invariant failed, an unexpected exception)
  usage = 2,          // the command line is wrong
  invalid_input = 3,  // an input file is malformed or inconsistent; nothing ran
  environment = 4,    // the machine cannot do it: no GPU/driver, no NVRTC, newer database
  failed_cases = 5,   // the run completed, but some case was incorrect or failed
  regression = 6,     // attn-tune compare --fail-on-regression: B is slower than A somewhere
  interrupted = 130,  // Ctrl-C (128 + SIGINT): attn-tune tune stopped between trials, resumable
};

inline int to_int(ExitCode code) {
  return static_cast<int>(code);
}

}  // namespace attn
