#include "models/scenario/framework.hpp"

#include <fmt/format.h>

#include "models/input/catalogue.hpp"

namespace plumb {
namespace {

// The scenario sections a framework may give defaults for.
constexpr const char* kSections[] = {"parallel", "training"};

}  // namespace

Framework apply_framework(Json& doc, SourceFile& src) {
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
  return fw;
}

}  // namespace plumb
