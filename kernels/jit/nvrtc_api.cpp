#include "kernels/jit/nvrtc_api.hpp"

#include <cuda.h>
#include <dlfcn.h>

#include <cstdlib>

namespace attn {

#define ATTN_NVRTC_STRINGIFY(x) #x

std::vector<std::string> cuda_toolkit_roots() {
  std::vector<std::string> roots;
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    const char* value = std::getenv(variable);
    if (value && *value) roots.emplace_back(value);
  }
  roots.emplace_back(ATTN_BUILD_CUDA_ROOT);
  roots.emplace_back("/usr/local/cuda");
  return roots;
}

std::unique_ptr<NvrtcApi> NvrtcApi::load() {
  std::unique_ptr<NvrtcApi> api(new NvrtcApi());
  const std::string soname = "libnvrtc.so." + std::to_string(CUDA_VERSION / 1000);
  std::vector<std::string> candidates;
  for (const auto& root : cuda_toolkit_roots()) candidates.push_back(root + "/lib64/" + soname);
  candidates.push_back(soname);  // the loader's own search path
  std::string tried;
  for (const auto& candidate : candidates) {
    api->library_ = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (api->library_) {
      api->library_path = candidate;
      break;
    }
    tried += "\n  " + candidate + ": " + dlerror();
  }
  if (!api->library_) {
    throw EnvironmentError(
        "NVRTC (" + soname +
        ") could not be loaded; set CUDA_HOME to the CUDA toolkit. Tried:" + tried);
  }
#define ATTN_LOAD_NVRTC_MEMBER(fn)                                                               \
  api->fn = reinterpret_cast<decltype(api->fn)>(dlsym(api->library_, ATTN_NVRTC_STRINGIFY(fn))); \
  if (!api->fn) throw EnvironmentError(api->library_path + " lacks " ATTN_NVRTC_STRINGIFY(fn));
  ATTN_NVRTC_FUNCTIONS(ATTN_LOAD_NVRTC_MEMBER)
#undef ATTN_LOAD_NVRTC_MEMBER
  return api;
}

std::string NvrtcApi::version() const {
  int major = 0, minor = 0;
  ATTN_NVRTC_CHECK(*this, nvrtcVersion(&major, &minor));
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace attn
