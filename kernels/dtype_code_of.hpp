// The element-type code (kernels/common/dtype_code.hpp) a kernel template takes for a host DType.
#pragma once

#include "base/dtype.hpp"

namespace attn {

int dtype_code_of(DType dtype);

}  // namespace attn
