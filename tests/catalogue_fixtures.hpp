#pragma once
// Bundled catalogue entries for tests, read strictly; a failure names the first problem.
#include <doctest/doctest.h>

#include "models/hardware.hpp"
#include "models/model_reader.hpp"

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

}  // namespace plumb::test
