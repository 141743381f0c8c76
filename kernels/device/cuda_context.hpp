// The device layer: the primary context of one GPU and move-only RAII owners of its resources.
// Destructors never throw; nothing is freed by hand.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "kernels/device/device_info.hpp"
#include "kernels/device/driver_api.hpp"

namespace attn {

// The result of looking for GPUs: the driver (if it loaded) and every device it reports.
struct DeviceDiscovery {
  std::shared_ptr<const DriverApi> api;  // null when no driver
  std::vector<DeviceInfo> devices;       // empty when none
  std::string why_none;                  // why `devices` is empty
};
DeviceDiscovery discover_devices();

class CudaContext {
 public:
  // Retains the primary context of device `ordinal` and makes it current on this thread.
  CudaContext(std::shared_ptr<const DriverApi> api, const DeviceInfo& info);
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  const DriverApi& api() const { return *api_; }
  const DeviceInfo& info() const { return info_; }
  void make_current() const;
  void synchronize() const;

 private:
  std::shared_ptr<const DriverApi> api_;
  DeviceInfo info_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
};

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const CudaContext& context, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;

  CUdeviceptr address() const { return address_; }
  void* pointer() const { return reinterpret_cast<void*>(address_); }
  size_t bytes() const { return bytes_; }
  void upload(const void* host, size_t bytes);
  void download(void* host, size_t bytes) const;

 private:
  void release() noexcept;
  const DriverApi* api_ = nullptr;
  CUdeviceptr address_ = 0;
  size_t bytes_ = 0;
};

class Stream {
 public:
  explicit Stream(const CudaContext& context);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  CUstream handle() const { return stream_; }
  void synchronize() const;

 private:
  const DriverApi* api_;
  CUstream stream_ = nullptr;
};

class Event {
 public:
  explicit Event(const CudaContext& context);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(const Stream& stream);
  void synchronize() const;
  // Milliseconds from `start` to this event; both must have completed.
  float elapsed_ms_since(const Event& start) const;

 private:
  const DriverApi* api_;
  CUevent event_ = nullptr;
};

// A loaded cubin and the kernels looked up in it.
class Module {
 public:
  Module(const CudaContext& context, const std::vector<char>& cubin);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  CUfunction function(const std::string& lowered_name) const;

 private:
  const DriverApi* api_;
  CUmodule module_ = nullptr;
};

struct LaunchShape {
  unsigned grid_x = 1, grid_y = 1, grid_z = 1;
  unsigned block_x = 1, block_y = 1, block_z = 1;
  unsigned shared_bytes = 0;
};

// Launches `function` with one by-value parameter struct.
template <typename Params>
void launch(const CudaContext& context, CUfunction function, const LaunchShape& shape,
            const Stream& stream, const Params& params) {
  void* args[] = {const_cast<Params*>(&params)};
  ATTN_CU_CHECK(context.api(), cuLaunchKernel(function, shape.grid_x, shape.grid_y, shape.grid_z,
                                              shape.block_x, shape.block_y, shape.block_z,
                                              shape.shared_bytes, stream.handle(), args, nullptr));
}

}  // namespace attn
