#include "kernels/device/sticky_errors.hpp"

#include "base/errors.hpp"

namespace attn {

bool is_sticky_cuda_error(long long status) {
  switch (status) {
    case 700:  // CUDA_ERROR_ILLEGAL_ADDRESS
    case 702:  // CUDA_ERROR_LAUNCH_TIMEOUT
    case 709:  // CUDA_ERROR_CONTEXT_IS_DESTROYED
    case 710:  // CUDA_ERROR_ASSERT
    case 714:  // CUDA_ERROR_HARDWARE_STACK_ERROR
    case 715:  // CUDA_ERROR_ILLEGAL_INSTRUCTION
    case 716:  // CUDA_ERROR_MISALIGNED_ADDRESS
    case 717:  // CUDA_ERROR_INVALID_ADDRESS_SPACE
    case 718:  // CUDA_ERROR_INVALID_PC
    case 719:  // CUDA_ERROR_LAUNCH_FAILED
    case 999:  // CUDA_ERROR_UNKNOWN
      return true;
    default:
      return false;
  }
}

bool is_sticky_cuda_error(const std::exception& error) {
  const auto* call = dynamic_cast<const CallError*>(&error);
  return call && call->library() == "CUDA driver" && is_sticky_cuda_error(call->status());
}

}  // namespace attn
