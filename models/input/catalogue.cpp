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
  if (std::filesystem::is_regular_file(p)) return p;
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
  if (!std::filesystem::is_regular_file(p)) {
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

}  // namespace plumb
