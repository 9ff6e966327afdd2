#pragma once
// Bundled catalogue entries for tests, read strictly; a failure names the first problem.
#include <doctest/doctest.h>
#include <fstream>
#include <sstream>

#include "models/input/catalogue.hpp"
#include "models/hardware/hardware.hpp"
#include "models/spec/model_reader.hpp"

namespace plumb::test {

template <class T, class Read>
T read_or_fail(const std::string& ref, Read read) {
  Diagnostics d;
  SourceFile src{"test", ".", &d, {}};
  std::optional<T> value = read(Json(ref), "", src);
  if (!value) FAIL(d.list().front().to_string());
  return *value;
}

inline ModelSpec model(const std::string& ref) { return read_or_fail<ModelSpec>(ref, read_model); }
inline GpuSpec gpu(const std::string& ref) { return read_or_fail<GpuSpec>(ref, read_gpu); }
inline FabricSpec fabric(const std::string& ref) { return read_or_fail<FabricSpec>(ref, read_fabric); }

// A bundled profile's JSON as written ("hw_profiles/gpus", "h100-sxm").
inline Json profile_file(const char* folder, const char* name) {
  std::ifstream in(data_dir() / folder / (std::string(name) + ".json"));
  std::stringstream s;
  s << in.rdbuf();
  return Json::parse(s.str());
}

}  // namespace plumb::test
