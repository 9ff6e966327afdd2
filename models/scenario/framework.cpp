#include "models/scenario/framework.hpp"

#include <fmt/format.h>

#include <optional>
#include <utility>

#include "models/hardware/hardware.hpp"
#include "models/input/catalogue.hpp"

namespace plumb {
namespace {

// The scenario sections a framework may give defaults for.
constexpr const char* kSections[] = {"parallel", "training"};

// (major, minor) of a compute capability ("10.0" → {10, 0}); {-1, -1} for none.
std::pair<int, int> capability_number(const std::string& cc) {
  if (!is_compute_capability(cc)) return {-1, -1};
  const auto dot = cc.find('.');
  return {std::stoi(cc.substr(0, dot)), std::stoi(cc.substr(dot + 1))};
}

// The entry of "from_compute_capability" that holds on a GPU of `cc`: the highest capability at or
// below it (frameworks test "capability >= (10, 0)"); empty when none does.
std::string capability_entry(const Json& from, const std::string& cc) {
  std::string best;
  const auto gpu = capability_number(cc);
  if (gpu.first < 0) return best;
  for (const auto& [key, _] : from.items()) {
    const auto at = capability_number(key);
    if (at.first >= 0 && at <= gpu && (best.empty() || at > capability_number(best))) best = key;
  }
  return best;
}

// Reads the profile's "from_compute_capability" into `fw` and writes the entry that holds on a GPU of
// `capability` into the scenario's training section where the scenario is silent. Each entry's
// defaults carry their sources.
void apply_capability_defaults(ObjectReader& r, Json& doc, SourceFile& src, const SourceFile& file, const std::string& capability,
                               Framework& fw) {
  const Json* from = r.child("from_compute_capability", Need::optional);
  if (!from) return;
  const std::string at = r.pointer("from_compute_capability");
  if (!from->is_object()) {
    file.error(at, fmt::format("expected an object from compute capability (\"10.0\": from that one up) to those GPUs' defaults, got {}",
                               json_brief(*from)));
    return;
  }
  for (const auto& [cc, entry] : from->items()) {
    ObjectReader er(entry, json_pointer_append(at, cc), file);
    const bool valid = is_compute_capability(cc);
    if (!valid) file.error(er.pointer(), "expected a compute capability as the key, as NVIDIA writes it (\"9.0\", \"10.0\")");
    if (!er.is_object()) continue;  // the reader has said so
    if (er.has("parallel"))
      er.error("parallel", "only training defaults may depend on the GPU (the planner re-derives them for each GPU it tries); give parallel "
                           "defaults for every GPU, outside from_compute_capability");
    const Json* training = er.child("training", Need::required);
    const Json* sources = er.child("sources", Need::required);
    if (!training) continue;
    if (!training->is_object()) {
      er.error("training", fmt::format("expected an object of scenario \"training\" keys, got {}", json_brief(*training)));
      continue;
    }
    std::optional<ObjectReader> sr;
    if (sources) sr.emplace(*sources, er.pointer("sources"), file);
    for (const auto& [key, value] : training->items()) {
      const std::string dotted = "training." + key;
      if (valid) fw.training_by_capability[cc][key] = value;
      if (!sr || !sr->is_object()) continue;
      if (auto text = sr->string(dotted, Need::optional)) fw.sources[fmt::format("{} (compute capability {} and up)", dotted, cc)] = *text;
      else sr->error(dotted, fmt::format("default \"{}\" has no source; cite the framework's code or docs", dotted));
    }
  }
  const std::string holds = capability_entry(fw.training_by_capability, capability);
  if (holds.empty()) return;
  for (const auto& [key, value] : fw.training_by_capability.at(holds).items()) {
    if (fw.own_training_keys.contains(key)) continue;
    Json& target = doc["training"];
    if (target.is_null()) target = Json::object();
    target[key] = value;
    fw.applied.push_back(fmt::format("training.{}={} (compute capability {} and up)", key, value.is_object() ? json_brief(value) : value.dump(),
                                     holds));
    src.overrides[json_pointer_append("/training", key)] =
        file.name == src.name ? std::string("the framework profile at /framework") : fmt::format("framework profile {}", file.name);
  }
}

}  // namespace

Framework apply_framework(Json& doc, SourceFile& src, const std::string& compute_capability) {
  Framework fw;
  if (!doc.is_object() || !doc.contains("framework")) return fw;
  const Json ref = doc.at("framework");
  Json loaded;
  SourceFile file = src;
  std::string pointer = "/framework", id;
  const Json* node = resolve_document(ref, kFrameworks, "framework profile", pointer, src, loaded, file, id);
  if (!node) return fw;
  fw.id = id;
  ObjectReader r(*node, pointer, file);
  fw.name = r.string("name", Need::required).value_or(id);
  r.string("description", Need::optional);
  const bool training_object = doc.contains("training") && doc.at("training").is_object();
  if (training_object)
    for (const auto& [key, _] : doc.at("training").items()) fw.own_training_keys.insert(key);
  // A GPU's own defaults first: the general ones below fill only what is still unset.
  if (training_object || !doc.contains("training") || doc.at("training").is_null())
    apply_capability_defaults(r, doc, src, file, compute_capability, fw);
  std::vector<std::string> keys;
  for (const char* section : kSections) {
    const Json* defaults = r.child(section, Need::optional);
    if (!defaults) continue;
    if (!defaults->is_object()) {
      r.error(section, fmt::format("expected an object of scenario \"{}\" keys, got {}", section, json_brief(*defaults)));
      continue;
    }
    Json& target = doc[section];
    if (target.is_null()) target = Json::object();
    for (const auto& [key, value] : defaults->items()) {
      const std::string dotted = fmt::format("{}.{}", section, key);
      keys.push_back(dotted);
      if (std::string_view(section) == "training") fw.training_defaults[key] = value;
      if (!target.is_object() || target.contains(key)) continue;  // the scenario's own value wins
      target[key] = value;
      fw.applied.push_back(fmt::format("{}={}", dotted, value.is_object() ? json_brief(value) : value.dump()));
      src.overrides[json_pointer_append(json_pointer_append("", section), key)] =
          file.name == src.name ? std::string("the framework profile at /framework") : fmt::format("framework profile {}", file.name);
    }
  }
  // Every default carries its source, keyed "section.key".
  if (const Json* s = r.child("sources", Need::required)) {
    ObjectReader sr(*s, r.pointer("sources"), file);
    for (const std::string& k : keys) {
      if (auto text = sr.string(k, Need::optional)) fw.sources[k] = *text;
      else if (sr.is_object()) sr.error(k, fmt::format("default \"{}\" has no source; cite the framework's code or docs", k));
    }
  }
  if (fw.depends_on_gpu() && doc.contains("training")) fw.training = doc.at("training");
  return fw;
}

Json training_on_capability(const Framework& fw, const std::string& compute_capability) {
  Json training = fw.training;
  const std::string holds = capability_entry(fw.training_by_capability, compute_capability);
  const Json own = holds.empty() ? Json::object() : fw.training_by_capability.at(holds);
  for (const auto& [cc, defaults] : fw.training_by_capability.items())
    for (const auto& [key, _] : defaults.items()) {
      if (fw.own_training_keys.contains(key)) continue;
      if (own.contains(key)) training[key] = own.at(key);
      else if (fw.training_defaults.contains(key)) training[key] = fw.training_defaults.at(key);
      else training.erase(key);
    }
  return training;
}

}  // namespace plumb
