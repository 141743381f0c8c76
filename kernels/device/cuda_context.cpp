#include "kernels/device/cuda_context.hpp"

#include <cstdio>
#include <utility>

namespace attn {

std::string format_cuda_version(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string DeviceInfo::arch() const {
  std::string arch = "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
  if (cc_major == 9 && cc_minor == 0) arch += "a";
  return arch;
}

double DeviceInfo::theoretical_bandwidth_gbps() const {
  return 2.0 * memory_clock_khz * 1e3 * (memory_bus_bits / 8.0) / 1e9;
}

namespace {
std::string format_uuid(const CUuuid& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  char text[64];
  std::snprintf(text, sizeof(text),
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return text;
}

DeviceInfo query_device(const DriverApi& api, int ordinal) {
  CUdevice device;
  ATTN_CU_CHECK(api, cuDeviceGet(&device, ordinal));
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  ATTN_CU_CHECK(api, cuDeviceGetName(name, sizeof(name) - 1, device));
  info.name = name;
  CUuuid uuid;
  ATTN_CU_CHECK(api, cuDeviceGetUuid(&uuid, device));
  info.uuid = format_uuid(uuid);
  auto attribute = [&](CUdevice_attribute which) {
    int value = 0;
    ATTN_CU_CHECK(api, cuDeviceGetAttribute(&value, which, device));
    return value;
  };
  info.cc_major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.cc_minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.sm_count = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.l2_bytes = attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  info.sm_clock_khz = attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  info.memory_clock_khz = attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  info.memory_bus_bits = attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  info.max_shared_per_block_optin =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  info.max_threads_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  size_t total = 0;
  ATTN_CU_CHECK(api, cuDeviceTotalMem(&total, device));
  info.total_memory = int64_t(total);
  ATTN_CU_CHECK(api, cuDriverGetVersion(&info.driver_version));
  return info;
}
}  // namespace

DeviceDiscovery discover_devices() {
  DeviceDiscovery found;
  std::string why_not;
  std::unique_ptr<DriverApi> api = DriverApi::load(&why_not);
  if (!api) {
    found.why_none = why_not;
    return found;
  }
  int count = 0;
  CUresult result = api->cuDeviceGetCount(&count);
  if (result != CUDA_SUCCESS) {
    found.why_none = "the NVIDIA driver could not count devices: " + api->describe(result);
    return found;
  }
  if (count == 0) {
    found.why_none = "the NVIDIA driver reports no CUDA devices";
    return found;
  }
  for (int i = 0; i < count; ++i) found.devices.push_back(query_device(*api, i));
  found.api = std::move(api);
  return found;
}

CudaContext::CudaContext(std::shared_ptr<const DriverApi> api, const DeviceInfo& info)
    : api_(std::move(api)), info_(info) {
  ATTN_CU_CHECK(*api_, cuDeviceGet(&device_, info.ordinal));
  ATTN_CU_CHECK(*api_, cuDevicePrimaryCtxRetain(&context_, device_));
  make_current();
}

CudaContext::~CudaContext() {
  if (context_) api_->cuDevicePrimaryCtxRelease(device_);
}

void CudaContext::make_current() const {
  ATTN_CU_CHECK(*api_, cuCtxSetCurrent(context_));
}
void CudaContext::synchronize() const {
  ATTN_CU_CHECK(*api_, cuCtxSynchronize());
}

DeviceBuffer::DeviceBuffer(const CudaContext& context, size_t bytes)
    : api_(&context.api()), bytes_(bytes) {
  if (bytes > 0) ATTN_CU_CHECK(*api_, cuMemAlloc(&address_, bytes));
}

DeviceBuffer::~DeviceBuffer() {
  release();
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : api_(other.api_),
      address_(std::exchange(other.address_, 0)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    api_ = other.api_;
    address_ = std::exchange(other.address_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (address_) api_->cuMemFree(address_);
  address_ = 0;
  bytes_ = 0;
}

void DeviceBuffer::upload(const void* host, size_t bytes) {
  ATTN_ASSERT(bytes <= bytes_, "upload larger than the buffer");
  if (bytes > 0) ATTN_CU_CHECK(*api_, cuMemcpyHtoD(address_, host, bytes));
}

void DeviceBuffer::download(void* host, size_t bytes) const {
  ATTN_ASSERT(bytes <= bytes_, "download larger than the buffer");
  if (bytes > 0) ATTN_CU_CHECK(*api_, cuMemcpyDtoH(host, address_, bytes));
}

Stream::Stream(const CudaContext& context) : api_(&context.api()) {
  ATTN_CU_CHECK(*api_, cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
}
Stream::~Stream() {
  if (stream_) api_->cuStreamDestroy(stream_);
}
void Stream::synchronize() const {
  ATTN_CU_CHECK(*api_, cuStreamSynchronize(stream_));
}

Event::Event(const CudaContext& context) : api_(&context.api()) {
  ATTN_CU_CHECK(*api_, cuEventCreate(&event_, CU_EVENT_DEFAULT));
}
Event::~Event() {
  if (event_) api_->cuEventDestroy(event_);
}
void Event::record(const Stream& stream) {
  ATTN_CU_CHECK(*api_, cuEventRecord(event_, stream.handle()));
}
void Event::synchronize() const {
  ATTN_CU_CHECK(*api_, cuEventSynchronize(event_));
}
float Event::elapsed_ms_since(const Event& start) const {
  float ms = 0;
  ATTN_CU_CHECK(*api_, cuEventElapsedTime(&ms, start.event_, event_));
  return ms;
}

Module::Module(const CudaContext& context, const std::vector<char>& cubin) : api_(&context.api()) {
  ATTN_CU_CHECK(*api_, cuModuleLoadData(&module_, cubin.data()));
}
Module::~Module() {
  if (module_) api_->cuModuleUnload(module_);
}
CUfunction Module::function(const std::string& lowered_name) const {
  CUfunction function = nullptr;
  ATTN_CU_CHECK(*api_, cuModuleGetFunction(&function, module_, lowered_name.c_str()));
  return function;
}

}  // namespace attn
