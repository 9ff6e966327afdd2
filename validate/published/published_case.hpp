#pragma once
// One case of the published suite (scenarios/published/): a scenario plumb runs, and what a paper or
// a repository measured when that job ran — step time, tokens/s/GPU, TFLOP/s/GPU or MFU, peak memory
// (over ranks, or of the first and last pipeline stages) — with its source and the assumptions made
// in writing the scenario.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/scenario/job.hpp"

namespace plumb {

// model_tflops_per_gpu counts the model's FLOPs (Korthikanti et al.'s 72Bslh²(…)); hardware_tflops_per_gpu
// also what recomputation executes again, as Megatron-LM's SC'21 Eq. 3 counts (96Bslh²(…) with full
// recomputation).
enum class Metric {
  step_time, tokens_per_s_per_gpu, model_tflops_per_gpu, hardware_tflops_per_gpu, mfu,
  peak_memory, first_stage_memory, last_stage_memory
};
inline constexpr std::size_t kMetrics = 8;
std::string_view metric_name(Metric m);
// The metric of that name (as `published.measured` and `plumb validate --csv` write it), if any.
std::optional<Metric> metric_named(std::string_view name);
// Time metrics (step time and the rates derived from it) and memory metrics are summarised apart.
bool is_memory_metric(Metric m);

// What PyTorch's caching allocator reports: torch.cuda.max_memory_allocated (tensors only: no CUDA
// context) or max_memory_reserved (allocated plus the allocator's cached, unused blocks).
enum class MemoryKind { allocated, reserved };
std::string_view memory_kind_name(MemoryKind k);

struct Measured {
  Metric metric;
  double value;  // seconds, tokens/s, TFLOP/s, a fraction, bytes
};

struct PublishedCase {
  std::string id;      // the case file's stem
  std::string group;   // which publication, e.g. "sc21-table1"; summaries are per group
  std::string source;  // paper table or repository path and date
  std::vector<std::string> assumptions;
  std::vector<Measured> measured;
  MemoryKind memory_kind = MemoryKind::allocated;
  Job job;
};

// Reads a case file: a scenario with a "published" section, with `overrides` ("key=value", as plumb run's
// --set) laid over its scenario. Throws InputError naming the file and the JSON pointer of every
// problem, in either part.
PublishedCase read_case(const std::filesystem::path& file, const std::vector<std::string>& overrides = {});

// The case files of a folder (sorted by name), or the files and folders given.
std::vector<std::filesystem::path> case_files(const std::vector<std::string>& paths);
// The bundled suite: scenarios/published/ under the data directory.
std::filesystem::path published_dir();

}  // namespace plumb
