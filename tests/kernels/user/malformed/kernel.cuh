// A source the malformed specs name: never compiled by the CPU tests, only read.
#include "attn_bench/user_kernel.h"
template <int kWarps>
__global__ void test_kernel(const AttnUserParams p) {}
