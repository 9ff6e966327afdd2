#include "fuzz/fuzz_targets.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <unistd.h>

#include "models/costs/step_costs.hpp"
#include "models/hardware/hardware.hpp"
#include "models/input/diagnostics.hpp"
#include "models/memory/memory.hpp"
#include "models/scenario/job.hpp"
#include "models/schedules/registry.hpp"
#include "models/spec/model_reader.hpp"
#include "models/step/step_builder.hpp"
#include "models/step/step_estimate.hpp"
#include "sim/limits.hpp"
#include "validate/calibrate/calibrate.hpp"
#include "validate/calibrate/nccl_tests_log.hpp"
#include "validate/published/baseline.hpp"
#include "validate/calibrate/simumax_system.hpp"
#include "validate/imports/megatron_args.hpp"
#include "validate/imports/torchtitan_config.hpp"
#include "validate/logs/training_log.hpp"
#include "validate/run/measured_run.hpp"
#include "validate/run/trace_collectives.hpp"
#include "validate/trace/trace_summary.hpp"

namespace plumb::fuzz {

namespace {

// The one folder of this process for the files a reader must open by path (its name holds the pid,
// so parallel fuzzers do not share it).
const std::filesystem::path& scratch() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path d = std::filesystem::temp_directory_path() / ("plumb-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

std::filesystem::path write_scratch(const std::string& name, std::string_view bytes) {
  std::filesystem::path p = scratch() / name;
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return p;
}

// Runs `read`; the refusals a reader is meant to give are swallowed, anything else escapes.
template <class Read>
void refusing_cleanly(Read&& read) {
  try {
    read();
  } catch (const InputError&) {
  } catch (const std::invalid_argument&) {  // a schedule or usage error: bad input
  } catch (const sim::LimitError&) {        // beyond the clock or this machine's memory
  }
}

std::string_view text_of(const std::uint8_t* data, std::size_t size) { return {reinterpret_cast<const char*>(data), size}; }

Json parsed(std::string_view text, const SourceFile& src) { return parse_json_text(std::string(text), src); }

// The bytes as a file a scenario refers to (`name` in the scratch folder), read by `read(path, src)`.
template <class Read>
void read_as_referenced(const char* name, const std::uint8_t* data, std::size_t size, Read read) {
  const std::filesystem::path path = write_scratch(name, text_of(data, size));
  refusing_cleanly([&] {
    Diagnostics d;
    SourceFile src{"scenario.json", scratch(), &d, {}};
    read(path, src);
    d.throw_if_any();
  });
}

}  // namespace

void scenario(const std::uint8_t* data, std::size_t size) {
  const std::string_view all = text_of(data, size);
  const std::size_t nul = all.find('\0');
  std::vector<std::string> sets;
  if (nul != std::string_view::npos) {
    std::string_view rest = all.substr(nul + 1);
    while (!rest.empty()) {
      const std::size_t end = rest.find('\n');
      if (std::string_view line = rest.substr(0, end); !line.empty()) sets.emplace_back(line);
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    }
  }
  const std::filesystem::path path = write_scratch("scenario.json", all.substr(0, nul));
  refusing_cleanly([&] {
    Job job = load_scenario(path, sets);
    plan_memory(job);
    StepCosts costs = step_costs(job);
    estimate_step(job.layout, job.microbatches(), costs);
    // The discrete-event step only where it is small, so that one input takes milliseconds.
    const ParallelLayout& p = job.layout;
    if (schedule_op_estimate(p.schedule, {.ranks = p.pp, .microbatches = job.microbatches(), .vp = p.vp}) <= 2000) {
      simulate_step(job, costs);
      // The full-rank step too on small jobs: classes, perturbations, the fabric's switches, failures.
      if (p.gpus() <= 512) simulate_step(job, costs, StepMode::full);
    }
  });
}

void model_preset(const std::uint8_t* data, std::size_t size) {
  refusing_cleanly([&] {
    Diagnostics d;
    SourceFile src{"model.json", scratch(), &d, {}};
    Json doc = parsed(text_of(data, size), src);
    if (!doc.is_discarded()) read_model_object(doc, "", src);
    d.throw_if_any();
  });
}

void hf_config(const std::uint8_t* data, std::size_t size) {
  read_as_referenced("config.json", data, size, [](const std::filesystem::path& p, const SourceFile& src) { read_hf_config(p, src, "/model/hf_config"); });
}

void gpu_profile(const std::uint8_t* data, std::size_t size) {
  read_as_referenced("gpu.json", data, size, [](const std::filesystem::path& p, const SourceFile& src) { read_gpu(Json(p.string()), "/cluster/gpu", src); });
}

void fabric_profile(const std::uint8_t* data, std::size_t size) {
  read_as_referenced("fabric.json", data, size,
                     [](const std::filesystem::path& p, const SourceFile& src) { read_fabric(Json(p.string()), "/cluster/fabric", src); });
}

void nccl_tests_log(const std::uint8_t* data, std::size_t size) {
  refusing_cleanly([&] { parse_nccl_tests_log(std::string(text_of(data, size)), "nccl.log"); });
}

void suite_csv(const std::uint8_t* data, std::size_t size) {
  refusing_cleanly([&] { read_suite_csv(std::string(text_of(data, size)), "baseline.csv"); });
}

void measurements(const std::uint8_t* data, std::size_t size) {
  refusing_cleanly([&] {
    Diagnostics d;
    SourceFile src{"measurements.json", scratch(), &d, {}};
    Json doc = parsed(text_of(data, size), src);
    d.throw_if_any();
    // As plumb calibrate reads a file: a SimuMax system config's GEMM tables, or plumb's own format.
    if (is_simumax_system(doc)) read_simumax_system(doc, "measurements.json");
    else read_measurements(doc, "measurements.json");
  });
}

void measured_run(const std::uint8_t* data, std::size_t size) {
  const std::filesystem::path path = write_scratch("measured.json", text_of(data, size));
  refusing_cleanly([&] { read_measured_run(path.string()); });
}

void profiler_trace(const std::uint8_t* data, std::size_t size) {
  static KernelClassifier classes = KernelClassifier::bundled();
  const std::filesystem::path path = write_scratch("trace.json", text_of(data, size));
  refusing_cleanly([&] {
    const TraceSummary summary = summarize_trace(read_gpu_trace(path.string()), classes);
    // Its annotated collectives as nccl-tests logs, and the fabric fitted to them.
    const TraceCollectiveLogs logs = collective_logs_from_trace(summary, 8);
    if (logs.logs.empty()) return;
    Diagnostics d;
    SourceFile src{"dgx-h100-ndr", {}, &d, {}};
    static const Json fabric_raw = load_profile_document(find_profile_file("dgx-h100-ndr")->path, true, src);
    static const std::optional<GpuSpec> gpu = read_gpu(Json("h100-sxm"), "", src);
    static const std::optional<FabricSpec> fabric = read_fabric(Json("dgx-h100-ndr"), "", src);
    calibrate_fabric(fabric_raw, *gpu, *fabric, logs.logs);
  });
}

void training_log(const std::uint8_t* data, std::size_t size) {
  const std::filesystem::path path = write_scratch("train.log", text_of(data, size));
  refusing_cleanly([&] {
    MemoryKind kind = MemoryKind::allocated;
    log_measurements(read_training_log(path.string()), kind);
  });
}

void launch_config(const std::uint8_t* data, std::size_t size) {
  const std::string text(text_of(data, size));
  ImportOptions options;
  options.nodes = 4;
  options.vocab = 32000;
  refusing_cleanly([&] { import_megatron(text, "launch.sh", options); });
  refusing_cleanly([&] { import_torchtitan(text, "train.toml", options); });
}

const std::vector<TargetInfo>& targets() {
  static const std::vector<TargetInfo> list{{"scenario", scenario},         {"model_preset", model_preset},
                                            {"hf_config", hf_config},       {"gpu_profile", gpu_profile},
                                            {"fabric_profile", fabric_profile}, {"nccl_tests_log", nccl_tests_log},
                                            {"measurements", measurements}, {"measured_run", measured_run},
                                            {"profiler_trace", profiler_trace}, {"training_log", training_log},
                                            {"launch_config", launch_config}, {"suite_csv", suite_csv}};
  return list;
}

}  // namespace plumb::fuzz
