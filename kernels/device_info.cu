#include "kernels/device_info.hpp"

#include <cuda_runtime.h>
#include <string>

#include "kernels/cuda_check.hpp"

namespace plumb::kernels {

std::vector<DeviceInfo> list_devices() {
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  int driver = 0;
  check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  std::vector<DeviceInfo> devices;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, i), "cudaGetDeviceProperties");
    DeviceInfo d;
    d.index = i;
    d.name = prop.name;
    d.sms = prop.multiProcessorCount;
    d.total_memory_bytes = prop.totalGlobalMem;
    d.compute_capability_major = prop.major;
    d.compute_capability_minor = prop.minor;
    d.memory_bus_width_bits = prop.memoryBusWidth;
    d.driver_version = std::to_string(driver / 1000) + "." + std::to_string((driver % 1000) / 10);
    devices.push_back(d);
  }
  return devices;
}

}  // namespace plumb::kernels
