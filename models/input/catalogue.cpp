#include "models/input/catalogue.hpp"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <fmt/ranges.h>

#ifndef PLUMB_SOURCE_DIR
#error "PLUMB_SOURCE_DIR must be defined by the build"
#endif

namespace plumb {

std::filesystem::path data_dir() {
  if (const char* env = std::getenv("PLUMB_DATA_DIR"); env && *env) return env;
  return PLUMB_SOURCE_DIR;
}

bool is_file(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

bool path_exists(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::exists(p, ec);
}

std::vector<std::string> catalogue_names(const std::string& folder) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(data_dir() / folder, ec))
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<std::filesystem::path> resolve_reference(const std::string& ref, const std::string& folder,
                                                       const std::string& what, const std::string& pointer,
                                                       const SourceFile& from) {
  if (ref.empty()) {
    from.error(pointer, fmt::format("empty {} name", what));
    return std::nullopt;
  }
  bool is_path = ref.find('/') != std::string::npos || ref.ends_with(".json");
  if (is_path) return resolve_path(ref, what, pointer, from);
  std::filesystem::path p = data_dir() / folder / (ref + ".json");
  if (is_file(p)) return p;
  std::vector<std::string> names = catalogue_names(folder);
  std::string hint = nearest_word(ref, names);
  from.error(pointer, fmt::format("unknown {} \"{}\"{}; bundled: {} (or give a path to a .json file)", what, ref,
                                  hint.empty() ? "" : fmt::format("; did you mean \"{}\"?", hint), fmt::join(names, ", ")));
  return std::nullopt;
}

std::optional<std::filesystem::path> resolve_path(const std::string& ref, const std::string& what,
                                                  const std::string& pointer, const SourceFile& from) {
  std::filesystem::path p(ref);
  if (p.is_relative()) p = from.dir / p;
  if (!is_file(p)) {
    from.error(pointer, fmt::format("{} file \"{}\" not found (looked for {})", what, ref, p.string()));
    return std::nullopt;
  }
  return p;
}

SourceFile source_for(const std::filesystem::path& path, const SourceFile& from) {
  std::error_code ec;
  std::filesystem::path relative = std::filesystem::relative(path, std::filesystem::current_path(), ec);
  std::string name = (!ec && !relative.empty() && relative.string().size() < path.string().size())
                         ? relative.string()
                         : path.string();
  return SourceFile{name, path.parent_path(), from.diagnostics, {}};
}

namespace {

Json load_derived_at(const std::filesystem::path& path, const std::string& folder, const std::string& what,
                     const SourceFile& file, int depth);

// A profile may start from another: {"base": "h800-sxm", ...} reads the base profile (a catalogue
// name or a path, itself perhaps derived) and lays this object over it as a JSON merge patch (RFC
// 7386): objects merge key by key, anything else replaces, null removes. `node` becomes the merged
// document, held in `doc`; false after an error, reported against `file`.
bool apply_base(const Json*& node, const std::string& folder, const std::string& what, const std::string& pointer,
                const SourceFile& file, Json& doc, int depth = 0) {
  if (!node->is_object() || !node->contains("base")) return true;
  const std::string at = pointer + "/base";
  const Json& base_ref = node->at("base");
  if (!base_ref.is_string()) {
    file.error(at, fmt::format("\"base\" names the {} this one starts from: a bundled name or a path, as a string", what));
    return false;
  }
  if (depth >= 8) {
    file.error(at, fmt::format("{}s derive from one another more than 8 deep; is there a cycle of \"base\"?", what));
    return false;
  }
  auto path = resolve_reference(base_ref.get<std::string>(), folder, what, at, file);
  if (!path) return false;
  Json merged = load_derived_at(*path, folder, what, source_for(*path, file), depth + 1);
  if (merged.is_discarded()) return false;
  Json patch = *node;
  patch.erase("base");
  merged.merge_patch(patch);
  doc = std::move(merged);
  node = &doc;
  return true;
}

Json load_derived_at(const std::filesystem::path& path, const std::string& folder, const std::string& what,
                     const SourceFile& file, int depth) {
  Json doc = load_json_file(path, file);
  if (doc.is_discarded()) return doc;
  const Json* node = &doc;
  Json merged;
  if (!apply_base(node, folder, what, "", file, merged, depth)) return Json(Json::value_t::discarded);
  return node == &merged ? merged : doc;
}

}  // namespace

Json load_derived(const std::filesystem::path& path, const std::string& folder, const std::string& what, const SourceFile& file) {
  return load_derived_at(path, folder, what, file, 0);
}

const Json* resolve_document(const Json& value, const std::string& folder, const std::string& what,
                             std::string& pointer, const SourceFile& src, Json& doc, SourceFile& file,
                             std::string& id) {
  if (!value.is_string()) {
    id = "(inline)";
    const Json* node = &value;
    return apply_base(node, folder, what, pointer, file, doc) ? node : nullptr;
  }
  auto path = resolve_reference(value.get<std::string>(), folder, what, pointer, src);
  if (!path) return nullptr;
  file = source_for(*path, src);
  doc = load_derived_at(*path, folder, what, file, 0);
  if (doc.is_discarded()) return nullptr;
  id = value.get<std::string>();
  pointer.clear();
  return &doc;
}


}  // namespace plumb
