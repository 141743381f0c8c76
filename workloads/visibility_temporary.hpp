// TEMPORARY (see visibility_temporary.cpp): the masks branch declares this in visibility.hpp.
#pragma once

#include "workloads/visibility.hpp"

namespace attn {
int64_t visible_pairs(const Batch& batch);
}
