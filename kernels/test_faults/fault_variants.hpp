// Test-only variants that fail on purpose, for the GPU acceptance of the tuner's isolation:
//   test.fault_oob_write  writes far out of bounds  -> crashed (sticky illegal address; the
//                                                     worker is replaced)
//   test.fault_bad_page   reads the K pool through a page number far outside it -> crashed
//                                                     (sticky illegal address; worker replaced)
//   test.fault_hang       never terminates          -> timed_out (the verify deadline)
//   test.fault_smem       asks for 1 MiB of dynamic shared memory -> launch_failed
//   test.fault_nan        writes NaN                -> incorrect
// Each takes paged_decode workloads and has one axis, `fault`: 1 runs the faulting kernel, 0 runs
// paged_decode.sm80_simt's default config (a correct, measured result), so a sweep mixes good and
// bad configs. Registered only when $ATTN_BENCH_TEST_VARIANTS is 1.
#pragma once

#include <memory>

namespace attn {

class Registry;
class Variant;

// True when $ATTN_BENCH_TEST_VARIANTS is "1".
bool test_variants_enabled();
void add_test_fault_variants(Registry& registry);
// test.cpu_reference_copies (kernels/test_faults/cpu_copies_variant.cpp): the CPU reference under
// axes `copy` (6 values) and `repeat` (4) that change nothing, a space of 24 configs for CPU sweep
// tests (kill -9 and resume, concurrent writers, Ctrl-C, a report's heatmap); test.cpu_incorrect
// (make_test_cpu_incorrect_variant); and test.delays (make_test_delays_variant).
void add_test_cpu_variants(Registry& registry);
// test.cpu_incorrect (kernels/test_faults/cpu_incorrect_variant.cpp): paged_decode.cpu_reference
// with its output zeroed afterwards, a case that fails verification on the CPU.
std::unique_ptr<Variant> make_test_cpu_incorrect_variant();
// test.delays (kernels/test_faults/delays_variant.cpp): the CPU reference followed by a
// sleep of `delay_ms` (24 values), a landscape whose winner is known, for the cluster-sweep test.
std::unique_ptr<Variant> make_test_delays_variant();

}  // namespace attn
