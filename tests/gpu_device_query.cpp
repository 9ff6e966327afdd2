// GPU test (ctest label "gpu"): the visible GPU's SM count and memory agree with its bundled profile.
#include <cstdio>

#include "tests/gpu_test_device.hpp"
#include "validate/calibrate/device_profile.hpp"

int main() {
  using namespace plumb;
  std::optional<kernels::DeviceInfo> gpu0 = first_gpu_or_skip();
  if (!gpu0) return 77;
  const kernels::DeviceInfo& d = *gpu0;
  std::printf("GPU 0: %s, %d SMs, %.1f GiB, sm_%d%d, driver %s\n", d.name.c_str(), d.sms,
              static_cast<double>(d.total_memory_bytes) / 1073741824.0, d.compute_capability_major,
              d.compute_capability_minor, d.driver_version.c_str());
  std::optional<GpuSpec> gpu = bundled_gpu_profile(d.name);
  if (!gpu) {
    std::printf("SKIPPED: no bundled profile for %s\n", d.name.c_str());
    return 77;
  }
  bool sms_ok = gpu->sms == d.sms;
  // The driver keeps part of HBM back, so the device shows a little less than the profile's capacity.
  double ratio = static_cast<double>(d.total_memory_bytes) / gpu->hbm_capacity;
  bool memory_ok = ratio > 0.97 && ratio <= 1.0;
  std::printf("profile %s: %lld SMs (%s), capacity ratio %.4f (%s)\n", gpu->id.c_str(), static_cast<long long>(gpu->sms),
              sms_ok ? "match" : "MISMATCH", ratio, memory_ok ? "ok" : "MISMATCH");
  return sms_ok && memory_ok ? 0 : 1;
}
