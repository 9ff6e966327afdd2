// Training logs as measurements (issue 25): Megatron-LM's iteration and memory lines, torchtitan's
// metric lines, in the formats those frameworks print (fixtures written from the formats, with figures
// from ground-truth.md §A and §C).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "models/input/catalogue.hpp"
#include "models/input/diagnostics.hpp"
#include "validate/logs/training_log.hpp"

using namespace plumb;
namespace fs = std::filesystem;

namespace {

double metric(const std::vector<Measured>& m, Metric which) {
  for (const Measured& x : m)
    if (x.metric == which) return x.value;
  FAIL("metric missing");
  return 0;
}

fs::path scratch(const std::string& text) {
  fs::path p = fs::temp_directory_path() / ("plumb-log-" + std::to_string(getpid()) + ".log");
  std::ofstream(p) << text;
  return p;
}

}  // namespace

TEST_CASE("a Megatron-LM log: the steady step time without the first iteration, model TFLOP/s, the largest max-allocated over ranks") {
  const TrainingLog log = read_training_log((data_dir() / "tests/fixtures/logs/megatron-format.log").string());
  CHECK(log.format == "megatron-lm");
  CHECK(log.iterations == 6);
  MemoryKind kind = MemoryKind::reserved;
  const std::vector<Measured> m = log_measurements(log, kind);
  CHECK(kind == MemoryKind::allocated);
  CHECK(metric(m, Metric::step_time) == doctest::Approx(0.8430));           // median of 843.9, 842.1, 843.0, 844.2, 842.7
  CHECK(metric(m, Metric::peak_memory) == doctest::Approx(68147.2 * 1048576));  // rank 0's max allocated, in MiB as Megatron prints it
  CHECK(metric(m, Metric::peak_memory) / 1073741824.0 == doctest::Approx(66.55).epsilon(0.001));  // ground-truth §C
  CHECK(metric(m, Metric::model_tflops_per_gpu) == doctest::Approx(707.0e12).epsilon(0.001));
}

TEST_CASE("a torchtitan log: tokens/s and MFU past the first logged step, reserved memory, colours stripped") {
  const TrainingLog log = read_training_log((data_dir() / "tests/fixtures/logs/torchtitan-format.log").string());
  CHECK(log.format == "torchtitan");
  MemoryKind kind = MemoryKind::allocated;
  const std::vector<Measured> m = log_measurements(log, kind);
  CHECK(kind == MemoryKind::reserved);
  CHECK(metric(m, Metric::tokens_per_s_per_gpu) == 5762);  // ground-truth §A; the first step's 4,021 left out
  CHECK(metric(m, Metric::mfu) == doctest::Approx(0.3373));
  CHECK(metric(m, Metric::peak_memory) == doctest::Approx(82.40 * 1073741824.0));
}

TEST_CASE("training logs: a malformed iteration line is refused with its line, a file without one with its name") {
  fs::path p = scratch("ok line\n iteration        1/      10 | elapsed time per iteration (ms): fast | lm loss: 1.0 |\n");
  CHECK_THROWS_WITH_AS(read_training_log(p.string()), doctest::Contains("line 2: elapsed time per iteration (ms) \"fast\" is not a non-negative number"),
                       InputError);
  p = scratch("step: 10  loss: 1.0  memory: lots(5%)  tps: 5,000\n");
  CHECK_THROWS_WITH_AS(read_training_log(p.string()), doctest::Contains("line 1: memory \"lots\" is not a number of GiB"), InputError);
  p = scratch("nothing to see here\n");
  CHECK_THROWS_WITH_AS(read_training_log(p.string()), doctest::Contains("no iteration line of Megatron-LM"), InputError);
  fs::remove(p);
}
