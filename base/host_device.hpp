// ATTN_HOST_DEVICE marks functions compiled both by g++ (host) and NVRTC (device): traits,
// parameter helpers, the counter RNG. Headers using it include no standard headers, since NVRTC
// compiles them too (they are embedded; see kernels/CMakeLists.txt).
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define ATTN_HOST_DEVICE __host__ __device__
#else
#define ATTN_HOST_DEVICE
#endif
