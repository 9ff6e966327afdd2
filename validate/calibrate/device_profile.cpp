#include "validate/calibrate/device_profile.hpp"

#include <algorithm>
#include <sstream>
#include <vector>

#include "models/input/catalogue.hpp"
#include "models/input/diagnostics.hpp"

namespace plumb {
namespace {

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

// A profile is a candidate when its model ("H100" of "NVIDIA H100 SXM5 80GB") is in the device's name;
// among candidates the one sharing the most words with it wins ("80GB" picks the 80 GB H100 over the
// 96 GB one), then the one with the fewest words of its own (the plain profile over a variant's).
std::optional<GpuSpec> bundled_gpu_profile(const std::string& device_name) {
  std::vector<std::string> device_words = words(device_name);
  std::optional<GpuSpec> best;
  std::size_t best_shared = 0, best_extra = 0;
  for (const std::string& name : catalogue_names(kGpuProfiles)) {
    Diagnostics d;
    SourceFile src{"bundled GPU profiles", data_dir(), &d, {}};
    std::optional<GpuSpec> g = read_gpu(Json(name), "", src);
    if (!g) continue;
    std::vector<std::string> profile_words = words(g->name);
    if (profile_words.size() < 2 || device_name.find(profile_words[1]) == std::string::npos) continue;
    std::size_t shared = 0;
    for (const std::string& w : profile_words) shared += std::find(device_words.begin(), device_words.end(), w) != device_words.end();
    std::size_t extra = profile_words.size() - shared;
    if (!best || shared > best_shared || (shared == best_shared && extra < best_extra)) {
      best = std::move(g);
      best_shared = shared;
      best_extra = extra;
    }
  }
  return best;
}

}  // namespace plumb
