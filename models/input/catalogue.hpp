#pragma once
// Where bundled data lives (model presets, GPU and fabric profiles) and how a reference in an input
// file ("deepseek-v3", "../my-model.json") becomes a file.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "models/input/json_reader.hpp"

namespace plumb {

// The folder holding models/presets, hw_profiles and scenarios: $PLUMB_DATA_DIR if set,
// otherwise the source tree plumb was built from.
std::filesystem::path data_dir();

// The bundled catalogues.
inline constexpr const char* kModelPresets = "models/presets";
inline constexpr const char* kGpuProfiles = "hw_profiles/gpus";
inline constexpr const char* kFabricProfiles = "hw_profiles/fabrics";
inline constexpr const char* kFrameworks = "frameworks";

// Whether `p` names a regular file / anything, without throwing: a path the system refuses (too long,
// a component that is not a folder, no permission) is simply not there, so its reader reports it as
// a missing file with the path it looked for.
bool is_file(const std::filesystem::path& p);
bool path_exists(const std::filesystem::path& p);

// Names (file stems) in a catalogue folder, sorted.
std::vector<std::string> catalogue_names(const std::string& folder);

// A reference is a path when it contains '/' or ends in ".json" (relative to the referring file's
// folder), otherwise a name in `folder`. Unknown names get a diagnostic at `pointer` with the
// nearest name and the list of valid ones.
std::optional<std::filesystem::path> resolve_reference(const std::string& ref, const std::string& folder,
                                                       const std::string& what, const std::string& pointer,
                                                       const SourceFile& from);

// A path relative to the referring file's folder (or absolute) that must name an existing file;
// otherwise a diagnostic at `pointer` saying where plumb looked.
std::optional<std::filesystem::path> resolve_path(const std::string& ref, const std::string& what,
                                                  const std::string& pointer, const SourceFile& from);

// A SourceFile for a file reached from `from` (same diagnostics sink), named relative to the
// working directory when that is shorter.
SourceFile source_for(const std::filesystem::path& path, const SourceFile& from);

// A catalogue file laid over its base if it names one ({"base": ...}, below); a discarded value after
// an error.
Json load_derived(const std::filesystem::path& path, const std::string& folder, const std::string& what, const SourceFile& file);

// A catalogue name, a path, or an inline object. A document may start from another: {"base":
// "h800-sxm", ...} reads the base (a catalogue name or a path, itself perhaps derived, at most 8 deep)
// and lays this object over it as a JSON merge patch (RFC 7386: objects merge key by key, anything
// else replaces, null removes). Returns the merged document (held in `doc`) or nullptr after an error;
// for a file, `file` becomes the source later errors are reported against, `pointer` its root and `id`
// the name given ("(inline)" for an object).
const Json* resolve_document(const Json& value, const std::string& folder, const std::string& what,
                             std::string& pointer, const SourceFile& src, Json& doc, SourceFile& file,
                             std::string& id);

}  // namespace plumb
