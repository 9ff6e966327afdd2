#include "validate/calibrate/device_profile.hpp"

#include "models/input/catalogue.hpp"
#include "models/input/diagnostics.hpp"

namespace plumb {

std::optional<GpuSpec> bundled_gpu_profile(const std::string& device_name) {
  for (const std::string& name : catalogue_names(kGpuProfiles)) {
    Diagnostics d;
    SourceFile src{"bundled GPU profiles", data_dir(), &d, {}};
    std::optional<GpuSpec> g = read_gpu(Json(name), "", src);
    if (!g) continue;
    std::string model = g->name.substr(g->name.find(' ') + 1);  // "H100 SXM5 80GB" from "NVIDIA H100 SXM5 80GB"
    model = model.substr(0, model.find(' '));
    if (device_name.find(model) != std::string::npos) return g;
  }
  return std::nullopt;
}

}  // namespace plumb
