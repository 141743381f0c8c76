// The CUDA driver API, loaded at run time with dlopen so that every binary starts, and every
// command that needs no GPU works, on a machine with no NVIDIA driver.
//
// DriverApi holds one function pointer per entry point we use. The members are declared through
// cuda.h's own prototypes (decltype), and looked up under the versioned symbol names cuda.h maps
// them to (cuMemAlloc -> cuMemAlloc_v2), so types and ABI always match the headers we build with.
// CUDA 13's cuda.h maps cuStreamBeginCapture to cuStreamBeginCapture_v2 (it takes a capture mode)
// and cuGraphInstantiate to cuGraphInstantiateWithFlags; the graph calls exist since CUDA 11.4 and
// cuTensorMapEncodeTiled (TMA descriptors, used by the sm_90a calibration GEMM) since CUDA 12.0.
#pragma once

#include <cuda.h>

#include <memory>
#include <string>

#include "base/errors.hpp"

#define ATTN_DRIVER_FUNCTIONS(X) \
  X(cuInit)                      \
  X(cuDriverGetVersion)          \
  X(cuGetErrorName)              \
  X(cuGetErrorString)            \
  X(cuDeviceGetCount)            \
  X(cuDeviceGet)                 \
  X(cuDeviceGetName)             \
  X(cuDeviceGetUuid)             \
  X(cuDeviceGetAttribute)        \
  X(cuDeviceTotalMem)            \
  X(cuDevicePrimaryCtxRetain)    \
  X(cuDevicePrimaryCtxRelease)   \
  X(cuCtxSetCurrent)             \
  X(cuCtxSynchronize)            \
  X(cuMemGetInfo)                \
  X(cuMemAlloc)                  \
  X(cuMemFree)                   \
  X(cuMemcpyHtoD)                \
  X(cuMemcpyDtoH)                \
  X(cuMemcpyHtoDAsync)           \
  X(cuMemcpyDtoHAsync)           \
  X(cuMemsetD8Async)             \
  X(cuMemsetD16Async)            \
  X(cuMemsetD32Async)            \
  X(cuMemcpyDtoDAsync)           \
  X(cuStreamCreate)              \
  X(cuStreamDestroy)             \
  X(cuStreamSynchronize)         \
  X(cuEventCreate)               \
  X(cuEventDestroy)              \
  X(cuEventRecord)               \
  X(cuEventSynchronize)          \
  X(cuEventElapsedTime)          \
  X(cuStreamBeginCapture)        \
  X(cuStreamEndCapture)          \
  X(cuGraphInstantiateWithFlags) \
  X(cuGraphLaunch)               \
  X(cuGraphDestroy)              \
  X(cuGraphExecDestroy)          \
  X(cuTensorMapEncodeTiled)      \
  X(cuModuleLoadData)            \
  X(cuModuleUnload)              \
  X(cuModuleGetFunction)         \
  X(cuFuncGetAttribute)          \
  X(cuFuncSetAttribute)          \
  X(cuLaunchKernel)

namespace attn {

struct DriverApi {
#define ATTN_DECLARE_DRIVER_MEMBER(fn) decltype(&::fn) fn = nullptr;
  ATTN_DRIVER_FUNCTIONS(ATTN_DECLARE_DRIVER_MEMBER)
#undef ATTN_DECLARE_DRIVER_MEMBER

  // Loads libcuda and calls cuInit(0). Returns null, with the reason in *why_not, when there is no
  // driver, an entry point is missing, or cuInit fails (e.g. no device).
  static std::unique_ptr<DriverApi> load(std::string* why_not);
  ~DriverApi();
  DriverApi(const DriverApi&) = delete;
  DriverApi& operator=(const DriverApi&) = delete;

  // "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"
  std::string describe(CUresult result) const;

 private:
  DriverApi() = default;
  void* library_ = nullptr;
};

[[noreturn]] void throw_driver_error(const DriverApi& api, CUresult result, const char* expr,
                                     const char* file, int line);

}  // namespace attn

// Calls a driver function through `api` and throws CallError on failure.
#define ATTN_CU_CHECK(api, call)                                                     \
  do {                                                                               \
    CUresult attn_cu_result_ = (api).call;                                           \
    if (attn_cu_result_ != CUDA_SUCCESS)                                             \
      ::attn::throw_driver_error((api), attn_cu_result_, #call, __FILE__, __LINE__); \
  } while (0)
