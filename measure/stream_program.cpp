#include "measure/stream_program.hpp"

namespace attn {

std::string stream_kernel(const char* name, int threads, int unroll) {
  return std::string("attn::") + name + "<" + std::to_string(threads) + ", " +
         std::to_string(unroll) + ">";
}

JitProgram stream_program(const std::string& arch, int threads, int unroll) {
  JitProgram program;
  program.name = "calibrate.stream.t" + std::to_string(threads) + ".u" + std::to_string(unroll);
  program.source = "#include \"kernels/calibrate/stream.cuh\"\n";
  program.kernels = {stream_kernel("stream_read", threads, unroll),
                     stream_kernel("stream_copy", threads, unroll)};
  program.arch = arch;
  return program;
}

}  // namespace attn
