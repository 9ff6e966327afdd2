#pragma once
// What the CUDA runtime reports about the visible GPUs: enough to match a device to its
// hw_profiles/gpus entry and to record it next to measurements.
#include <cstdint>
#include <string>
#include <vector>

namespace plumb::kernels {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int sms = 0;
  std::uint64_t total_memory_bytes = 0;
  int compute_capability_major = 0, compute_capability_minor = 0;
  int memory_bus_width_bits = 0;
  std::string driver_version;  // "13.0"
};

// Throws std::runtime_error with the CUDA error text when the runtime cannot be queried.
std::vector<DeviceInfo> list_devices();

}  // namespace plumb::kernels
