#include "kernels/device/driver_api.hpp"

#include <dlfcn.h>

namespace attn {

#define ATTN_STRINGIFY_EXPANDED(x) ATTN_STRINGIFY(x)
#define ATTN_STRINGIFY(x) #x

std::unique_ptr<DriverApi> DriverApi::load(std::string* why_not) {
  std::unique_ptr<DriverApi> api(new DriverApi());
  for (const char* name : {"libcuda.so.1", "libcuda.so"}) {
    api->library_ = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (api->library_) break;
  }
  if (!api->library_) {
    *why_not = "no NVIDIA driver: libcuda.so.1 could not be loaded";
    return nullptr;
  }
  // The expanded macro name is the versioned symbol cuda.h binds to (cuMemAlloc_v2, ...).
#define ATTN_LOAD_DRIVER_MEMBER(fn)                                                           \
  api->fn =                                                                                   \
      reinterpret_cast<decltype(api->fn)>(dlsym(api->library_, ATTN_STRINGIFY_EXPANDED(fn))); \
  if (!api->fn) {                                                                             \
    *why_not = std::string("the NVIDIA driver is too old: it lacks ") +                       \
               ATTN_STRINGIFY_EXPANDED(fn) + " (needs CUDA " +                                \
               std::to_string(CUDA_VERSION / 1000) + ".x support)";                           \
    return nullptr;                                                                           \
  }
  ATTN_DRIVER_FUNCTIONS(ATTN_LOAD_DRIVER_MEMBER)
#undef ATTN_LOAD_DRIVER_MEMBER

  CUresult init = api->cuInit(0);
  if (init != CUDA_SUCCESS) {
    *why_not = "the NVIDIA driver is present but cuInit failed: " + api->describe(init);
    return nullptr;
  }
  return api;
}

DriverApi::~DriverApi() {
  // The driver stays loaded: unloading libcuda while the process runs is not supported.
}

std::string DriverApi::describe(CUresult result) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName) cuGetErrorName(result, &name);
  if (cuGetErrorString) cuGetErrorString(result, &text);
  std::string out = name ? name : "CUDA error " + std::to_string(int(result));
  if (text) out += std::string(": ") + text;
  return out;
}

void throw_driver_error(const DriverApi& api, CUresult result, const char* expr, const char* file,
                        int line) {
  const char* name = nullptr;
  const char* text = nullptr;
  api.cuGetErrorName(result, &name);
  api.cuGetErrorString(result, &text);
  // Out of device memory is the machine's limit, not a bug (docs/exit-codes.md).
  const ExitCode code =
      result == CUDA_ERROR_OUT_OF_MEMORY ? ExitCode::environment : ExitCode::internal;
  throw CallError("CUDA driver", result, name ? name : "", text ? text : "", expr, file, line,
                  code);
}

}  // namespace attn
