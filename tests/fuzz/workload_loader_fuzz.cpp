// libFuzzer target for the workload loader: `make fuzz` builds it with clang and
// -fsanitize=fuzzer,address,undefined (tests/fuzz/CMakeLists.txt) and runs it over the seed corpus
// for a bounded time; docs/reliability.md says how to run it longer and what to do with a crasher.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tests/fuzz/workload_input_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    attn::fuzz::check_workload_input(
        std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const attn::fuzz::PropertyViolation& e) {
    std::fprintf(stderr, "workload loader property violated: %s\n", e.what());
    std::abort();  // libFuzzer keeps the input as a crasher
  }
  // Any other exception escapes: std::terminate, also a crasher.
  return 0;
}
