#include "kernels/dtype_code_of.hpp"

#include "kernels/common/dtype_code.hpp"

namespace attn {

int dtype_code_of(DType dtype) {
  switch (dtype) {
    case DType::bf16:
      return kDTypeBf16;
    case DType::fp16:
      return kDTypeFp16;
    case DType::fp8_e4m3:
      return kDTypeFp8E4m3;
    case DType::fp32:
      return kDTypeFp32;
  }
  return kDTypeFp32;
}

}  // namespace attn
