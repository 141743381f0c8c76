// The JIT program of the streaming kernels (kernels/calibrate/stream.cuh: stream_read and
// stream_copy), used by attn-bench calibrate for the memory ceilings and by the L2 flush.
#pragma once

#include <string>

#include "kernels/jit/jit_compiler.hpp"

namespace attn {

JitProgram stream_program(const std::string& arch, int threads, int unroll);
// The name expression of one of its kernels: name is "stream_read" or "stream_copy".
std::string stream_kernel(const char* name, int threads, int unroll);

}  // namespace attn
