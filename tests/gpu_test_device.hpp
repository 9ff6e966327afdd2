#pragma once
// GPU test programs: the first visible GPU, or a "SKIPPED: …" line saying why there is none (the
// program then exits 77, ctest's skip code for the gpu label).
#include <cstdio>
#include <exception>
#include <optional>

#include "kernels/device_info.hpp"

inline std::optional<plumb::kernels::DeviceInfo> first_gpu_or_skip() {
  try {
    std::vector<plumb::kernels::DeviceInfo> devices = plumb::kernels::list_devices();
    if (!devices.empty()) return devices.front();
    std::printf("SKIPPED: no GPU visible\n");
  } catch (const std::exception& e) {
    std::printf("SKIPPED: no usable GPU (%s)\n", e.what());
  }
  return std::nullopt;
}
