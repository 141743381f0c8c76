// The datasheet's dense bf16 tensor-core rate of the GPUs whose numbers we know, per SM per clock,
// so that a kernel's TFLOP/s can be set beside the peak at the clock the kernel ran at:
//   sm_80, A100 / A800 / A30 (GA100): 4 tensor cores x 256 bf16 FMA = 2048 FLOP/clk/SM;
//     A100 SXM: 2048 x 108 SMs x 1410 MHz = 312 TFLOP/s, the datasheet's figure.
//   sm_90, H100 / H200 / H800 / GH200 (GH100): 4 tensor cores x 512 bf16 FMA = 4096 FLOP/clk/SM;
//     H100 and H200 SXM: 4096 x 132 SMs x 1830 MHz = 989 TFLOP/s, the datasheet's figure
//     (1071 TFLOP/s at the 1980 MHz attention kernels hold).
// Dense, without sparsity. Other devices (another compute capability, or a cut-down part such as
// the H20 whose tensor rate is not GH100's) have no entry: no peak is printed rather than a wrong
// one.
#pragma once

#include <optional>

#include "results/records.hpp"

namespace attn {

// FLOPs per SM per clock of dense bf16 with fp32 accumulation; nullopt for a device not listed.
std::optional<double> datasheet_bf16_flop_per_clock_per_sm(const DeviceRecord& device);

// The datasheet peak at `sm_clock_mhz` in TFLOP/s: the rate x SMs x clock; nullopt for a device
// not listed or a clock that is not positive.
std::optional<double> datasheet_bf16_tflops(const DeviceRecord& device, double sm_clock_mhz);

}  // namespace attn
