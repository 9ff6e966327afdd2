#pragma once
// The bundled GPU profile of a device the CUDA runtime names ("NVIDIA H100 80GB HBM3" → h100-sxm,
// "NVIDIA H200" → h200-sxm); nullopt when no bundled profile is of that model.
#include <optional>
#include <string>

#include "models/hardware/hardware.hpp"

namespace plumb {

std::optional<GpuSpec> bundled_gpu_profile(const std::string& device_name);

}  // namespace plumb
