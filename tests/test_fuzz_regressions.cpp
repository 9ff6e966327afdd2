// Replays every fuzz target's seed corpus and found crashes (tests/fuzz_regressions/<target>/): each
// input is read, or refused with a clean error, and nothing else escapes (issue 27).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "test_files.hpp"
#include "fuzz/fuzz_targets.hpp"
#include "models/input/catalogue.hpp"

namespace fs = std::filesystem;
using namespace plumb;

namespace {

// fuzz/targets.txt: "name: path path ..." per target.
std::map<std::string, std::vector<fs::path>> seed_paths() {
  std::map<std::string, std::vector<fs::path>> seeds;
  std::ifstream in(data_dir() / "fuzz/targets.txt");
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t colon = line.find(':');
    REQUIRE(colon != std::string::npos);
    std::istringstream paths(line.substr(colon + 1));
    std::vector<fs::path>& mine = seeds[line.substr(0, colon)];
    for (std::string p; paths >> p;) mine.push_back(data_dir() / p);
  }
  return seeds;
}

// The files a path stands for: itself, or a folder's regular files (not its subfolders).
std::vector<fs::path> files_of(const fs::path& p) {
  std::vector<fs::path> out;
  if (fs::is_regular_file(p)) out.push_back(p);
  else if (fs::is_directory(p))
    for (const auto& e : fs::directory_iterator(p))
      if (e.is_regular_file() && e.path().extension() != ".md") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("every fuzz target reads or cleanly refuses its seeds and every crash fuzzing found") {
  const auto seeds = seed_paths();
  REQUIRE(seeds.size() == fuzz::targets().size());
  for (const fuzz::TargetInfo& t : fuzz::targets()) {
    REQUIRE_MESSAGE(seeds.count(t.name), "fuzz/targets.txt has no line for " << t.name);
    std::vector<fs::path> inputs;
    for (const fs::path& p : seeds.at(t.name)) {
      std::vector<fs::path> found = files_of(p);
      CHECK_MESSAGE(!found.empty(), t.name << ": seed path " << p.string() << " holds no file");
      inputs.insert(inputs.end(), found.begin(), found.end());
    }
    for (const fs::path& p : files_of(data_dir() / "tests/fuzz_regressions" / t.name)) inputs.push_back(p);
    for (const fs::path& p : inputs) {
      INFO(t.name << " ← " << fs::relative(p, data_dir()).string());
      const std::string bytes = test::file_bytes(p);
      CHECK_NOTHROW(t.run(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
    }
  }
}
