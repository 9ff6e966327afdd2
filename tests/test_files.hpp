#pragma once
// A file's whole contents, for tests that read fixtures as bytes.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace plumb::test {

inline std::string file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace plumb::test
