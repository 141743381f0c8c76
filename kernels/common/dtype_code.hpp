// Element-type codes shared by host (g++) and device (NVRTC) code: the host renders a code as a
// template argument, the device template branches on it at compile time.
#pragma once

namespace attn {

enum DTypeCode : int {
  kDTypeBf16 = 0,
  kDTypeFp16 = 1,
  kDTypeFp8E4m3 = 2,
  kDTypeFp32 = 3,
};

}  // namespace attn
