// NVRTC, loaded at run time (like the driver) so that binaries start without the toolkit's
// libraries on the loader path. Looked up in: $CUDA_HOME/lib64, $CUDA_PATH/lib64, the toolkit the
// build used, /usr/local/cuda/lib64, then the loader's default path.
#pragma once

#include <nvrtc.h>

#include <memory>
#include <string>
#include <vector>

#include "base/errors.hpp"

#define ATTN_NVRTC_FUNCTIONS(X) \
  X(nvrtcVersion)               \
  X(nvrtcGetErrorString)        \
  X(nvrtcCreateProgram)         \
  X(nvrtcDestroyProgram)        \
  X(nvrtcCompileProgram)        \
  X(nvrtcGetProgramLogSize)     \
  X(nvrtcGetProgramLog)         \
  X(nvrtcGetCUBINSize)          \
  X(nvrtcGetCUBIN)              \
  X(nvrtcAddNameExpression)     \
  X(nvrtcGetLoweredName)

namespace attn {

struct NvrtcApi {
#define ATTN_DECLARE_NVRTC_MEMBER(fn) decltype(&::fn) fn = nullptr;
  ATTN_NVRTC_FUNCTIONS(ATTN_DECLARE_NVRTC_MEMBER)
#undef ATTN_DECLARE_NVRTC_MEMBER

  // Throws EnvironmentError listing the places tried when NVRTC cannot be loaded.
  static std::unique_ptr<NvrtcApi> load();
  NvrtcApi(const NvrtcApi&) = delete;
  NvrtcApi& operator=(const NvrtcApi&) = delete;

  std::string library_path;     // the file that was loaded
  std::string version() const;  // "13.0"

 private:
  NvrtcApi() = default;
  void* library_ = nullptr;
};

// Candidate folders holding the CUDA toolkit, in search order (existing or not).
std::vector<std::string> cuda_toolkit_roots();

}  // namespace attn

// NVRTC out of memory is the machine's limit (exit code environment); anything else a bug.
#define ATTN_NVRTC_CHECK(api, call)                                                              \
  do {                                                                                           \
    nvrtcResult attn_nvrtc_result_ = (api).call;                                                 \
    if (attn_nvrtc_result_ != NVRTC_SUCCESS)                                                     \
      throw ::attn::CallError(                                                                   \
          "NVRTC", attn_nvrtc_result_, (api).nvrtcGetErrorString(attn_nvrtc_result_), "", #call, \
          __FILE__, __LINE__,                                                                    \
          attn_nvrtc_result_ == NVRTC_ERROR_OUT_OF_MEMORY ? ::attn::ExitCode::environment        \
                                                          : ::attn::ExitCode::internal);         \
  } while (0)
