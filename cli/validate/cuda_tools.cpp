#include "cli/validate/cuda_tools.hpp"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <chrono>
#include <thread>
#include <unistd.h>

#include "kernels/bench/attention_bench.hpp"
#include "kernels/bench/gemm_bench.hpp"
#include "kernels/bench/memory_bench.hpp"
#include "kernels/bench/nccl_bench.hpp"
#include "kernels/device_info.hpp"
#include "models/costs/flops.hpp"
#include "models/input/units.hpp"
#include "models/scenario/job.hpp"
#include "validate/calibrate/device_profile.hpp"
#include "validate/calibrate/nccl_tests_log.hpp"
#include "validate/gpu/cuda_pipeline_device.hpp"
#include "validate/gpu/gpu_numerics.hpp"
#include "validate/run/bench_plan.hpp"

namespace plumb::cli {
namespace {

// Times each GEMM (median of `reps`); refuses a time faster than the profile's peak.
std::vector<std::pair<BenchGemm, double>> time_gemms(const std::vector<BenchGemm>& gemms, const std::optional<GpuSpec>& profile,
                                                     bool quick, int reps) {
  std::vector<std::pair<BenchGemm, double>> timed;
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    const BenchGemm& g = gemms[i];
    const std::string_view dtype = math_dtype_name(g.dtype);
    kernels::GemmTiming t;
    try {
      t = kernels::time_gemm(g.m, g.n, g.k, g.dtype == MathDtype::fp8 ? kernels::GemmInputs::fp8_e4m3 : kernels::GemmInputs::bf16,
                             quick ? 2 : 5, reps);
    } catch (const std::runtime_error& e) {
      std::cerr << fmt::format("[{}/{}] {} {}×{}×{} skipped: {}\n", i + 1, gemms.size(), dtype, g.m, g.n, g.k, e.what());
      continue;
    }
    double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
    double tflops = flops / t.median_seconds / kTera;
    std::cerr << fmt::format("[{}/{}] {} {}×{}×{} {:.1f} TFLOP/s ({})\n", i + 1, gemms.size(), dtype, g.m, g.n, g.k, tflops, g.what);
    if (profile && profile->peak_dense.count(g.dtype) && flops / t.min_seconds > 1.02 * profile->peak_dense.at(g.dtype))
      throw std::runtime_error(fmt::format("{} {}×{}×{} ran at {:.0f} TFLOP/s, above the {} {} peak: the timing is wrong", dtype, g.m, g.n,
                                           g.k, flops / t.min_seconds / kTera, profile->name, dtype));
    timed.emplace_back(g, t.median_seconds);
  }
  return timed;
}

// Streaming copies of 256 MiB, 1 GiB and 4 GiB per buffer (one size when quick), as far as memory allows;
// refuses a rate above the profile's HBM bandwidth.
std::vector<MemoryMeasurement> time_copies(const kernels::DeviceInfo& device, const std::optional<GpuSpec>& profile, bool quick,
                                           int reps) {
  std::vector<MemoryMeasurement> memory;
  for (std::size_t mib : quick ? std::vector<std::size_t>{256} : std::vector<std::size_t>{256, 1024, 4096}) {
    const std::size_t bytes = mib << 20;
    if (4 * bytes > device.total_memory_bytes) continue;
    kernels::CopyTiming t;
    try {
      t = kernels::time_copy(bytes, quick ? 2 : 3, reps);
    } catch (const std::runtime_error& e) {
      std::cerr << fmt::format("copy of {} MiB skipped: {}\n", mib, e.what());
      continue;
    }
    double rate = t.bytes_moved / t.median_seconds;
    std::cerr << fmt::format("copy {} MiB: {:.0f} GB/s read + written\n", mib, rate / 1e9);
    if (profile && rate > 1.02 * profile->hbm_bandwidth)
      throw std::runtime_error(fmt::format("a copy ran at {:.0f} GB/s, above the {} HBM bandwidth: the timing is wrong", rate / 1e9,
                                           profile->name));
    memory.push_back({"copy", t.bytes_moved, t.median_seconds});
  }
  return memory;
}

// Flash attention at the scenario's heads and a sweep of sequence lengths (one call when quick); refuses a
// rate above the profile's bf16 peak.
std::vector<AttentionMeasurement> time_attention_calls(const Job* job, bool sweep, const std::optional<GpuSpec>& profile,
                                                       bool quick, int reps) {
  std::vector<AttentionMeasurement> attention;
  std::vector<BenchAttention> calls = bench_attention(job, sweep);
  if (quick && calls.size() > 1) calls.resize(1);
  for (const BenchAttention& b : calls) {
    const kernels::AttentionCall& c = b.call;
    kernels::AttentionTiming t;
    try {
      t = kernels::time_attention(c, quick ? 2 : 3, reps);
    } catch (const std::exception& e) {
      std::cerr << fmt::format("attention {}×{} ({}, {}) skipped: {}\n", c.batch_heads, c.seq, c.d_qk, c.d_v, e.what());
      continue;
    }
    AttentionMeasurement a{static_cast<double>(c.batch_heads), static_cast<double>(c.seq), static_cast<double>(c.d_qk),
                           static_cast<double>(c.d_v), c.causal, t.forward_seconds, t.backward_seconds, b.what};
    const FlashAttentionFlops f = flash_attention_flops(a.batch_heads * a.seq, a.seq, a.d_qk, a.d_v, a.causal);
    std::cerr << fmt::format("attention {} heads × {} tokens ({}, {}), causal: forward {:.1f}, backward {:.1f} TFLOP/s ({})\n",
                             c.batch_heads, c.seq, c.d_qk, c.d_v, f.forward / t.forward_seconds / kTera,
                             f.backward_executed() / t.backward_seconds / kTera, b.what);
    if (profile && profile->peak_dense.count(MathDtype::bf16) &&
        std::max(f.forward / t.forward_seconds, f.backward_executed() / t.backward_seconds) > 1.02 * profile->peak_dense.at(MathDtype::bf16))
      throw std::runtime_error(fmt::format("attention ran above the {} bf16 peak: the timing is wrong", profile->name));
    attention.push_back(a);
  }
  return attention;
}

// Raises the SM clock from idle before anything is timed, without pushing the GPU to its power limit:
// 8192³ bf16 GEMMs for about `seconds`, then a pause. Measured on the H200 (2026-11-26): from idle
// (345 MHz) the clock took about 0.4 s to climb (1,560–1,635 MHz meanwhile: the first rows timed 13–16%
// slow); after a second of back-to-back 8192³ GEMMs the card sat at its 700 W limit at 1,230–1,725 MHz
// and the rows timed next were up to 19% slower; once the load stops the clock stays at 1,980 MHz for
// over a second while the power falls within half of one. The pipelined run held 1,904 MHz on average
// (1,785 at least) at 600 W.
void warm_up(double seconds) {
  const kernels::GemmTiming one = kernels::time_gemm(8192, 8192, 8192, kernels::GemmInputs::bf16, 1, 3);
  const int reps = static_cast<int>(std::clamp(seconds / std::max(one.median_seconds, 1e-6), 1.0, 100000.0));
  kernels::time_gemm(8192, 8192, 8192, kernels::GemmInputs::bf16, 0, reps);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::cerr << fmt::format("warm-up: {} GEMMs of 8192³, then 0.3 s idle: SM clock {} MHz\n", reps + 4, kernels::sm_clock_mhz());
}

}  // namespace

int gpu_bench(const Args& args, const std::string& date) {
  if (!args.flag("--out")) throw UsageError("--out FILE is required");
  std::vector<kernels::DeviceInfo> devices = kernels::list_devices();
  if (devices.empty()) throw std::runtime_error("no GPU is visible");
  const kernels::DeviceInfo& device = devices.front();
  std::optional<Job> job;
  if (args.flag("--scenario")) job = load_scenario(args.value("--scenario"), args.values("--set"));
  const bool quick = args.flag("--quick");
  std::vector<BenchGemm> gemms = bench_gemms(job ? &*job : nullptr, !args.flag("--no-sweep"));
  if (quick)
    gemms.erase(std::remove_if(gemms.begin(), gemms.end(), [](const BenchGemm& g) { return g.what != "sweep" || g.m > 4096; }),
                gemms.end());
  const int reps = static_cast<int>(args.integer("--reps", quick ? 5 : 20, 1, 10000));
  std::optional<GpuSpec> profile = bundled_gpu_profile(device.name);
  // fp8 tensor cores from Ada (8.9) and Hopper (9.0) on.
  const bool fp8 = !args.flag("--no-fp8") && device.compute_capability_major * 10 + device.compute_capability_minor >= 89;
  if (fp8) {
    std::size_t shapes = gemms.size();
    for (std::size_t i = 0; i < shapes; ++i) {
      BenchGemm g = gemms[i];
      g.dtype = MathDtype::fp8;
      gemms.push_back(g);
    }
  }
  warm_up(0.2);
  const std::vector<std::pair<BenchGemm, double>> timed = time_gemms(gemms, profile, quick, reps);
  const std::vector<MemoryMeasurement> memory = time_copies(device, profile, quick, reps);
  std::vector<AttentionMeasurement> attention;
  if (!args.flag("--no-attention")) attention = time_attention_calls(job ? &*job : nullptr, !args.flag("--no-sweep"), profile, quick, reps);
  LaunchMeasurement launch{2000, kernels::time_kernel_overhead(2000)};
  std::cerr << fmt::format("kernel launch: {:.2f} us each, back to back\n", launch.seconds_per_kernel * 1e6);
  Json doc = measurements_json(device.name, device.driver_version, kernels::sm_clock_mhz(), date, timed, memory, launch, attention);
  std::ofstream out(args.value("--out"));
  if (!out) throw UsageError("cannot write " + args.value("--out"));
  out << doc.dump(1) << "\n";
  std::cout << fmt::format("{} GEMMs, {} attention calls and {} copies timed on {} → {}\n", timed.size(), attention.size(), memory.size(),
                           device.name, args.value("--out"));
  return timed.empty() ? 1 : 0;
}

void use_gpu_at_hand(Job& full) {
  std::vector<kernels::DeviceInfo> devices = kernels::list_devices();
  if (devices.empty()) throw std::runtime_error("no GPU is visible");
  const kernels::DeviceInfo& device = devices.front();
  if (std::optional<GpuSpec> profile = bundled_gpu_profile(device.name)) full.cluster.gpu = *profile;  // the GPU at hand
  full.cluster.gpu.sms = device.sms;
}

std::unique_ptr<PipelineDevice> gpu_pipeline_device(const VirtualRun& plan) {
  const kernels::DeviceInfo device = kernels::list_devices().front();
  double need = 0;
  for (std::int32_t r = 0; r < static_cast<std::int32_t>(plan.job.layout.pp); ++r)
    need += static_cast<double>(plan_buffers(plan, r).total()) + 32.0 * (1 << 20);  // and each rank's GEMM workspace
  std::cerr << fmt::format("device memory planned: {:.1f} GiB of {:.1f} GiB\n", need / (1 << 30),
                           static_cast<double>(device.total_memory_bytes) / (1 << 30));
  if (need > 0.95 * static_cast<double>(device.total_memory_bytes))
    throw std::runtime_error(fmt::format("the run needs {:.1f} GiB of the GPU's {:.1f} GiB: give fewer --stages, or a shorter "
                                         "--set training.seq_len (unfused attention keeps each stage's score matrix)",
                                         need / (1 << 30), static_cast<double>(device.total_memory_bytes) / (1 << 30)));
  return make_cuda_pipeline_device(plan, device.index);
}

double gpu_numerics_tolerance() { return kGpuNumericsTolerance; }

NumericCheck gpu_numerics_check(const PipelineSchedule& schedule) {
  if (kernels::list_devices().empty()) throw std::runtime_error("no GPU is visible");
  return check_schedule_numerics_gpu(schedule);
}

// The largest message the collective sweep's --min/--max accept: 1 TB.
constexpr double kMaxSweepBytes = 1e12;

int gpu_collectives(const Args& args) {
  if (!args.flag("--out-dir")) throw UsageError("--out-dir DIR is required");
  std::vector<kernels::DeviceInfo> devices = kernels::list_devices();
  if (devices.size() < 2) throw std::runtime_error(fmt::format("collectives need two or more GPUs; {} visible", devices.size()));
  const std::vector<std::pair<std::string, std::pair<kernels::NcclCollective, CollectiveOp>>> ops{
      {"all_reduce", {kernels::NcclCollective::all_reduce, CollectiveOp::all_reduce}},
      {"all_gather", {kernels::NcclCollective::all_gather, CollectiveOp::all_gather}},
      {"reduce_scatter", {kernels::NcclCollective::reduce_scatter, CollectiveOp::reduce_scatter}},
      {"all_to_all", {kernels::NcclCollective::all_to_all, CollectiveOp::all_to_all}}};
  const std::string which = args.value("--op", "all");
  std::vector<std::string> names{"all"};
  for (const auto& [name, op] : ops) names.push_back(name);
  if (std::find(names.begin(), names.end(), which) == names.end()) throw UsageError(plumb::cli::unknown_word_message("--op", which, names));
  const double min_bytes = args.number("--min", 8, 1, kMaxSweepBytes), max_bytes = args.number("--max", 1073741824.0, min_bytes, kMaxSweepBytes);
  const int iters = static_cast<int>(args.integer("--iters", 20, 1, 100000));
  std::vector<int> ids;
  std::vector<std::string> device_names;
  for (const kernels::DeviceInfo& d : devices) {
    ids.push_back(d.index);
    device_names.push_back(d.name);
  }
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  std::error_code made;
  std::filesystem::create_directories(args.value("--out-dir"), made);
  if (made) throw UsageError(fmt::format("--out-dir {}: cannot create it ({})", args.value("--out-dir"), made.message()));
  for (const auto& [name, op] : ops) {
    if (which != "all" && which != name) continue;
    std::vector<kernels::NcclTiming> t = kernels::time_nccl(op.first, ids, min_bytes, max_bytes, 5, iters);
    std::vector<NcclTestsRow> rows;
    for (const kernels::NcclTiming& x : t) rows.push_back({x.bytes, x.seconds, 0, 0, x.in_place_seconds});
    const std::string file = (std::filesystem::path(args.value("--out-dir")) / (nccl_tests_binary(op.second) + ".log")).string();
    std::ofstream out(file);
    if (!out) throw UsageError("cannot write " + file);
    out << nccl_tests_log_text(op.second, host, device_names, rows);
    std::cout << fmt::format("{}: {} sizes over {} GPUs → {}\n", name, rows.size(), ids.size(), file);
  }
  return 0;
}


}  // namespace plumb::cli
