// Host side of the GPU batch fill (device code: batch_fill.cuh): generates a batch's Q and K/V
// pools directly in device memory, bit-identical to the host fill (workloads/batch_data.hpp), so
// large batches need not be filled on the CPU and copied over PCIe.
#pragma once

#include <string>

#include "kernels/device/cuda_context.hpp"
#include "kernels/exec_context.hpp"
#include "kernels/fill/batch_fill_params.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "workloads/batch.hpp"
#include "workloads/batch_data.hpp"

namespace attn {

// The pool addressing of the batch's layout for one stream, derived from pool_offset and checked
// against it (an internal error if the layout is not of the form batch_fill_params.hpp describes).
PoolStrides pool_strides(const Batch& batch, DataStream stream);

// One program with the query and pool kernels for the batch's dtypes.
JitProgram batch_fill_program(const Batch& batch, const std::string& arch);

// Fills q (query_elements of dtype) and the pools (pool_elements of kv_dtype each) on `stream`
// and waits for it. Unowned pool slots are NaN, as on the host.
void fill_batch_on_device(const Batch& batch, CUdeviceptr q, CUdeviceptr k_pool, CUdeviceptr v_pool,
                          const CudaContext& context, KernelLoader& loader, const Stream& stream);

}  // namespace attn
