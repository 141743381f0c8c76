// CUDA driver errors that leave the context unusable ("sticky"): after one of them every later call
// in the process fails, so the only recovery is a new process. The tuner records the case as
// crashed and replaces the worker (tuner/worker_evaluator.hpp).
#pragma once

#include <exception>

namespace attn {

// CUDA_ERROR_ILLEGAL_ADDRESS (700), LAUNCH_TIMEOUT (702), ASSERT (710), HARDWARE_STACK_ERROR
// (714), ILLEGAL_INSTRUCTION (715), MISALIGNED_ADDRESS (716), INVALID_ADDRESS_SPACE (717),
// INVALID_PC (718), LAUNCH_FAILED (719), CONTEXT_IS_DESTROYED (709), UNKNOWN (999).
bool is_sticky_cuda_error(long long status);

// True for a CallError from the CUDA driver whose status is sticky.
bool is_sticky_cuda_error(const std::exception& error);

}  // namespace attn
