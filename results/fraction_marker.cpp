#include "results/fraction_marker.hpp"

#include "results/table.hpp"

namespace attn {

std::string fraction_text(const CeilingFraction& f, const std::string& missing) {
  if (!f.fraction) return missing;
  return format("%.1f%%", *f.fraction * 100) +
         (f.above_ceiling() || f.above_peak() ? kAboveCeilingMarker : "");
}

std::string peak_text(const CeilingFraction& f, const std::string& missing) {
  if (!f.peak_fraction || !f.peak_tflops) return missing;
  return format("%.1f%% of %.0f", *f.peak_fraction * 100, *f.peak_tflops) +
         (f.above_peak() ? kAboveCeilingMarker : "");
}

namespace {

std::string memory_reason(const CeilingFraction& f) {
  std::string why = format(
      "above the DRAM ceiling: L2 reuse. %.1f%% of the DRAM read ceiling (%.0f GB/s): the kernel "
      "read less than the logical minimum from DRAM and the rest from the L2",
      *f.fraction * 100, *f.ceiling_value);
  if (f.unique_fraction && *f.unique_fraction < *f.fraction) {
    why += format(
        "; K/V pages that sequences share through a common prefix count once per sequence in "
        "the logical minimum and come from DRAM once: counted once (the unique minimum) it is "
        "%.1f%%",
        *f.unique_fraction * 100);
    if (*f.unique_fraction > 1.0) why += ", the rest is data earlier launches left in the L2";
  } else {
    why +=
        " (data earlier launches left there: a working set that fits next to the L2, or "
        "--no-flush-l2)";
  }
  return why;
}

std::string compute_reason(const CeilingFraction& f) {
  std::string why;
  if (f.clock_scaled) {
    why = format(
        "above the bf16 ceiling: the calibration GEMM runs below the tensor cores' peak. %.1f%% "
        "of the bf16 GEMM rate calibrated at %.0f MHz and scaled to this kernel's %.0f MHz "
        "(%.0f TFLOP/s)",
        *f.fraction * 100, *f.calibrated_mhz, f.result_mhz, *f.ceiling_value);
  } else if (!f.calibrated_mhz) {
    why = format(
        "above the bf16 ceiling: not scaled to this kernel's clock. %.1f%% of the bf16 GEMM rate "
        "as calibrated (%.0f TFLOP/s), whose SM clock was not recorded",
        *f.fraction * 100, *f.ceiling_value);
    if (f.result_mhz > 0) why += format(" (%.0f MHz)", f.result_mhz);
    why +=
        ", and the GEMM runs power-limited below the clock attention kernels hold; run "
        "`attn-bench calibrate` again to record it";
  } else {
    why = format(
        "above the bf16 ceiling: this kernel's SM clock was not read. %.1f%% of the bf16 GEMM "
        "rate calibrated at %.0f MHz (%.0f TFLOP/s), not scaled to the kernel's clock",
        *f.fraction * 100, *f.calibrated_mhz, *f.ceiling_value);
  }
  if (f.peak_tflops && f.peak_fraction) {
    why += format(
        "; the datasheet dense bf16 peak at %.0f MHz is %.0f TFLOP/s, of which this is %.1f%%",
        f.result_mhz, *f.peak_tflops, *f.peak_fraction * 100);
  }
  return why;
}

}  // namespace

std::string above_ceiling_reason(const CeilingFraction& f) {
  if (f.above_peak()) {
    return format(
        "above the datasheet peak: the time or the FLOP count of this result is wrong. %.1f%% of "
        "the datasheet dense bf16 peak at %.0f MHz (%.0f TFLOP/s), which no kernel exceeds",
        *f.peak_fraction * 100, f.result_mhz, *f.peak_tflops);
  }
  if (!f.above_ceiling() || !f.ceiling_value) return "";
  return f.ceiling == "read_bw" ? memory_reason(f) : compute_reason(f);
}

std::string unscaled_ceiling_note(const CeilingRecord& bf16_ceiling) {
  if (bf16_ceiling.metric != kBf16Tflops || bf16_ceiling.sm_clock_mhz) return "";
  return "the bf16 ceiling's SM clock was not recorded (calibrated before attn-bench recorded it): "
         "bf16_tensor fractions are against it as measured, not scaled to each kernel's clock; "
         "run `attn-bench calibrate` again to record it";
}

}  // namespace attn
