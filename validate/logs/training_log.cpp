#include "validate/logs/training_log.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <regex>
#include <sstream>

#include "models/input/diagnostics.hpp"
#include "models/input/json_reader.hpp"
#include "models/input/statistics.hpp"

namespace plumb {

namespace {

std::string without_colours(const std::string& line) {
  static const std::regex ansi("\x1b\\[[0-9;]*m");
  return std::regex_replace(line, ansi, "");
}

// "5,762" → 5762.
std::optional<double> number(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), ','), text.end());
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v) && v >= 0) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// The value after `key` in a "key: value |" or "key: value  " field; nullopt when the key is absent.
std::optional<std::string> field(const std::string& line, const std::string& key) {
  const std::size_t at = line.find(key);
  if (at == std::string::npos) return std::nullopt;
  std::size_t start = line.find_first_not_of(' ', at + key.size());
  if (start == std::string::npos) return std::string();
  const std::size_t end = line.find_first_of(" |(", start);
  return line.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The steady state: every iteration but the first, when there are more than one.
std::vector<double> steady(const std::vector<double>& v) { return v.size() > 1 ? std::vector<double>(v.begin() + 1, v.end()) : v; }

}  // namespace

TrainingLog read_training_log(const std::string& path) {
  Diagnostics d;
  SourceFile src{path, {}, &d, {}};
  std::optional<std::string> text = read_input_text(path, src);
  d.throw_if_any();
  TrainingLog log;
  log.file = path;
  auto fail = [&](std::size_t line, const std::string& message) { throw InputError({Diagnostic{path, fmt::format("line {}", line), message}}); };
  auto need = [&](std::size_t n, const std::string& line, const std::string& key, const std::string& what) {
    std::optional<std::string> v = field(line, key);
    std::optional<double> x = v ? number(*v) : std::nullopt;
    if (!x) fail(n, fmt::format("{} \"{}\" is not a non-negative number", what, v.value_or("")));
    return *x;
  };
  std::istringstream in(*text);
  std::string raw;
  for (std::size_t n = 1; std::getline(in, raw); ++n) {
    const std::string line = without_colours(raw);
    if (line.find(" iteration ") != std::string::npos && line.find("elapsed time per iteration (ms):") != std::string::npos) {
      log.format = "megatron-lm";
      ++log.iterations;
      log.step_seconds.push_back(need(n, line, "elapsed time per iteration (ms):", "elapsed time per iteration (ms)") / 1e3);
      if (field(line, "throughput per GPU (TFLOP/s/GPU):"))
        log.tflops_per_gpu.push_back(need(n, line, "throughput per GPU (TFLOP/s/GPU):", "throughput per GPU (TFLOP/s/GPU)"));
    } else if (line.find("memory (MB) | allocated:") != std::string::npos) {
      const double mib = 1024.0 * 1024.0;  // Megatron divides by 1024 × 1024 and calls it MB
      log.max_allocated = std::max(log.max_allocated.value_or(0), need(n, line, "max allocated:", "max allocated") * mib);
      log.max_reserved = std::max(log.max_reserved.value_or(0), need(n, line, "max reserved:", "max reserved") * mib);
    } else if (line.find("step:") != std::string::npos && (line.find(" tps:") != std::string::npos || line.find(" wps:") != std::string::npos)) {
      log.format = "torchtitan";
      ++log.iterations;
      const bool tps = line.find(" tps:") != std::string::npos;
      log.tokens_per_s_per_gpu.push_back(need(n, line, tps ? "tps:" : "wps:", tps ? "tps" : "wps"));
      if (std::optional<std::string> m = field(line, "mfu:"); m && m->ends_with("%") && number(m->substr(0, m->size() - 1)))
        log.mfu.push_back(*number(m->substr(0, m->size() - 1)) / 100);
      if (std::optional<std::string> mem = field(line, "memory:")) {
        const std::size_t gib = mem->find("GiB");
        std::optional<double> v = gib == std::string::npos ? std::nullopt : number(mem->substr(0, gib));
        if (!v) fail(n, fmt::format("memory \"{}\" is not a number of GiB", *mem));
        log.max_reserved = std::max(log.max_reserved.value_or(0), *v * 1073741824.0);
      }
    }
  }
  if (log.iterations == 0)
    throw InputError({Diagnostic{path, "", "no iteration line of Megatron-LM (\"iteration N/ M | … elapsed time per iteration (ms): …\") "
                                           "or torchtitan (\"step: N … tps: …\"): is this a training log?"}});
  return log;
}

std::vector<Measured> log_measurements(const TrainingLog& log, MemoryKind& memory_kind) {
  std::vector<Measured> out;
  if (!log.step_seconds.empty()) out.push_back({Metric::step_time, median(steady(log.step_seconds))});
  if (!log.tokens_per_s_per_gpu.empty()) out.push_back({Metric::tokens_per_s_per_gpu, median(steady(log.tokens_per_s_per_gpu))});
  // Megatron-LM counts each GEMM three times and no recomputation: model FLOPs.
  if (!log.tflops_per_gpu.empty() && log.format == "megatron-lm")
    out.push_back({Metric::model_tflops_per_gpu, 1e12 * median(steady(log.tflops_per_gpu))});
  if (!log.mfu.empty()) out.push_back({Metric::mfu, median(steady(log.mfu))});
  // torchtitan reports the reserved peak; Megatron both, and the allocated one is what plumb models.
  memory_kind = log.max_allocated ? MemoryKind::allocated : MemoryKind::reserved;
  if (log.max_allocated) out.push_back({Metric::peak_memory, *log.max_allocated});
  else if (log.max_reserved) out.push_back({Metric::peak_memory, *log.max_reserved});
  return out;
}

}  // namespace plumb
