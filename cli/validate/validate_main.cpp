// plumb-validate: measurements on the GPU at hand, for `plumb calibrate` and `plumb compare`.
//   plumb-validate bench [--scenario S] [--set k=v ...] [--quick] [--no-sweep] [--reps N] --out F
//   plumb-validate run SCENARIO [--stages K] [--layers-per-stage L] [--micro-batches M] ... --out F
//   plumb-validate collectives [--op OP|all] [--min BYTES] [--max BYTES] [--iters N] --out-dir DIR
//   plumb-validate numerics [--schedule S|all] [--pp P] [--microbatches M] [--vp V]
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <unistd.h>
#include <ctime>
#include <fmt/format.h>
#include <fstream>
#include <iostream>

#include "cli/args/args.hpp"
#include "kernels/bench/attention_bench.hpp"
#include "kernels/device_info.hpp"
#include "kernels/bench/gemm_bench.hpp"
#include "kernels/bench/memory_bench.hpp"
#include "kernels/bench/nccl_bench.hpp"
#include "models/input/catalogue.hpp"
#include "models/input/diagnostics.hpp"
#include "models/input/units.hpp"
#include "models/schedules/registry.hpp"
#include "models/costs/flops.hpp"
#include "validate/run/bench_plan.hpp"
#include "validate/calibrate/device_profile.hpp"
#include "validate/gpu/gpu_numerics.hpp"
#include "validate/run/measured_run.hpp"
#include "validate/calibrate/nccl_tests_log.hpp"
#include "validate/gpu/stage_executor.hpp"
#include "validate/run/virtual_run.hpp"

namespace {

using namespace plumb;
using plumb::cli::Args;
using plumb::cli::CommandSpec;
using plumb::cli::UsageError;

const CommandSpec kBench{
    "bench",
    "plumb-validate bench [--scenario S] [--set key=value ...] [--quick] [--no-sweep] [--no-fp8] [--no-attention] [--reps N] --out F",
    "Times the scenario's GEMMs (every stage's layer and head, forward, input and weight gradient, as plumb\n"
    "costs them) and a sweep of square sizes with cuBLASLt on GPU 0 — in bf16, and in fp8 (e4m3, per-tensor\n"
    "scales) where the GPU has fp8 (compute capability 8.9 and up) — plumb's flash attention kernel forward and\n"
    "backward at the scenario's heads and over sequences of 1K–16K tokens, a streaming copy at three sizes, and\n"
    "writes the measurement file plumb calibrate fits the GPU profile's GEMM efficiency tables, attention and\n"
    "HBM efficiencies from. Refuses a GEMM or attention pass faster than the profile's dense peak or a copy\n"
    "faster than its HBM bandwidth (a timing error, not a result).",
    {},
    {{"--scenario", "S", "the scenario whose GEMM shapes to time (default: the sweep only)"},
     {"--set", "KEY=VALUE", "override a scenario field (repeatable)", true},
     {"--quick", "", "squares up to 4096, 5 repetitions, one copy size: a smoke test"},
     {"--no-sweep", "", "only the scenario's shapes"},
     {"--no-attention", "", "no flash attention runs"},
     {"--no-fp8", "", "bf16 GEMMs only"},
     {"--reps", "N", "timed repetitions per GEMM after warm-up (20)"},
     {"--out", "FILE", "where the measurement file goes"}}};

const CommandSpec kRun{
    "run",
    "plumb-validate run SCENARIO [--set key=value ...] [--stages K] [--layers-per-stage L] [--micro-batches M]\n"
    "                   [--layer-kind moe|dense] [--sms-per-stage S] [--attention flash|unfused] [--steps N] [--no-kernel-times]\n"
    "                   --out F [--trace T]",
    "Executes the scenario's pipeline schedule with real kernels on GPU 0, shrunk to fit it: K virtual stages, each\n"
    "a CUDA green context holding its share of the SMs (--sms-per-stage; default the SMs over K in groups of 8),\n"
    "L layers per stage with the full job's shapes (a MoE layer as one EP rank of the full layout runs it, TP's\n"
    "sharding as narrower GEMMs), every op as cuBLASLt GEMMs (fp8 where the scenario trains in fp8) and the\n"
    "memory-bound kernels plumb costs, attention by plumb's flash kernel (or unfused: batched GEMMs and a softmax\n"
    "pass), sends as device copies. Times every op and kernel with CUDA events and writes the file `plumb compare`\n"
    "reads.",
    {"SCENARIO"},
    {{"--set", "KEY=VALUE", "override a scenario field (repeatable)", true},
     {"--stages", "K", "virtual pipeline ranks on the GPU (4)"},
     {"--layers-per-stage", "L", "transformer layers per model stage (1)"},
     {"--micro-batches", "M", "micro-batches per step (twice the stages)"},
     {"--layer-kind", "KIND", "moe or dense (moe for MoE models)"},
     {"--sms-per-stage", "S", "SMs per green context"},
     {"--attention", "KERNEL", "flash (plumb's kernel, the default) or unfused (batched GEMMs and a softmax pass)"},
     {"--steps", "N", "timed steps after one warm-up step (3)"},
     {"--no-kernel-times", "", "time ops only, not each kernel"},
     {"--out", "FILE", "where the measured run goes"},
     {"--trace", "FILE", "the median step's timeline as a Chrome trace (Perfetto)"}}};

const CommandSpec kCollectives{
    "collectives",
    "plumb-validate collectives [--op all_reduce|all_gather|reduce_scatter|all_to_all|all] [--min BYTES] [--max BYTES]\n"
    "                           [--iters N] --out-dir DIR",
    "Times NCCL collectives over every visible GPU from one process, as nccl-tests does (float data, out-of-place\n"
    "and in-place, warm-up, the mean of --iters launches, the slowest GPU), over sizes doubling from --min to --max,\n"
    "and writes one nccl-tests-format log per collective into DIR (all_reduce_perf.log, …), which plumb calibrate\n"
    "--nccl-tests reads. Needs two or more GPUs and NCCL at run time (libnccl.so.2 on the library path, or\n"
    "PLUMB_NCCL=/path/to/libnccl.so.2).",
    {},
    {{"--op", "OP", "the collective, or all (default)"},
     {"--min", "BYTES", "smallest size (8)"},
     {"--max", "BYTES", "largest size (1 GiB)"},
     {"--iters", "N", "timed launches per size (20)"},
     {"--out-dir", "DIR", "where the logs go"}}};

const CommandSpec kNumerics{
    "numerics",
    "plumb-validate numerics [--schedule S|all] [--pp P] [--microbatches M] [--vp V]",
    "Checks that a pipeline schedule computes what a serial run does, on GPU 0 with real kernels: a small model\n"
    "(per stage one SwiGLU MLP block with a residual, 64 tokens per micro-batch, cuBLASLt bf16 GEMMs with fp32\n"
    "accumulation, a squared-error loss) runs the schedule's ops on one stream per pipeline rank in the order\n"
    "plumb-validate run queues them, each waiting on CUDA events for what other ranks produce, with every buffer\n"
    "poisoned with NaN first; then serially on one stream. The loss and every weight gradient must agree within\n"
    "1e-3 (relative; only the order the micro-batches' weight gradients are summed in differs).",
    {},
    {{"--schedule", "S", "a schedule name, or all (default)"},
     {"--pp", "P", "pipeline ranks (4)"},
     {"--microbatches", "M", "micro-batches (twice the ranks)"},
     {"--vp", "V", "model stages per rank for interleaved (2)"}}};

std::string today_utc() {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  return fmt::format("{:04}-{:02}-{:02}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
}

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

int bench(const Args& args) {
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
  const std::vector<std::pair<BenchGemm, double>> timed = time_gemms(gemms, profile, quick, reps);
  const std::vector<MemoryMeasurement> memory = time_copies(device, profile, quick, reps);
  std::vector<AttentionMeasurement> attention;
  if (!args.flag("--no-attention")) attention = time_attention_calls(job ? &*job : nullptr, !args.flag("--no-sweep"), profile, quick, reps);
  LaunchMeasurement launch{2000, kernels::time_kernel_overhead(2000)};
  std::cerr << fmt::format("kernel launch: {:.2f} us each, back to back\n", launch.seconds_per_kernel * 1e6);
  Json doc = measurements_json(device.name, device.driver_version, kernels::sm_clock_mhz(), today_utc(), timed, memory, launch, attention);
  std::ofstream out(args.value("--out"));
  if (!out) throw UsageError("cannot write " + args.value("--out"));
  out << doc.dump(1) << "\n";
  std::cout << fmt::format("{} GEMMs, {} attention calls and {} copies timed on {} → {}\n", timed.size(), attention.size(), memory.size(),
                           device.name, args.value("--out"));
  return timed.empty() ? 1 : 0;
}

int run(const Args& args) {
  if (!args.flag("--out")) throw UsageError("--out FILE is required");
  MeasuredSetup setup;
  setup.scenario = args.positional(0);
  setup.overrides = args.values("--set");
  VirtualRunOptions& o = setup.options;
  o.stages = args.integer("--stages", 4, 1, 64);
  o.layers_per_stage = args.integer("--layers-per-stage", 1, 1, 64);
  o.micro_batches = args.integer("--micro-batches", 0, 0, 4096);
  o.layer_kind = args.value("--layer-kind");
  o.sms_per_stage = args.integer("--sms-per-stage", 0, 0, 10000);
  o.attention = plumb::cli::choose("--attention", args.value("--attention", "flash"), attention_kernel_words());
  std::vector<kernels::DeviceInfo> devices = kernels::list_devices();  // the options are checked first
  if (devices.empty()) throw std::runtime_error("no GPU is visible");
  const kernels::DeviceInfo& device = devices.front();
  Job full = load_scenario(setup.scenario, setup.overrides);
  if (std::optional<GpuSpec> profile = bundled_gpu_profile(device.name)) full.cluster.gpu = *profile;  // the GPU at hand
  full.cluster.gpu.sms = device.sms;
  VirtualRun plan = plan_virtual_run(full, o);
  std::size_t kernels_per_step = 0;
  for (const RunOp& op : plan.order)
    kernels_per_step += plan.kernels(plan.schedule.ops[static_cast<std::size_t>(op.rank)][static_cast<std::size_t>(op.index)]).size();
  std::cerr << fmt::format("{}: {} ranks × {} SMs, {} stages of {} layer(s), {} micro-batches, {} ops and {} kernels per step\n",
                           device.name, plan.job.layout.pp, plan.job.cluster.gpu.sms, plan.job.layout.stages(), o.layers_per_stage,
                           plan.job.microbatches(), plan.order.size(), kernels_per_step);
  double need = 0;
  for (std::int32_t r = 0; r < static_cast<std::int32_t>(plan.job.layout.pp); ++r)
    need += static_cast<double>(plan_buffers(plan, r).total()) + 32.0 * (1 << 20);  // and each rank's GEMM workspace
  std::cerr << fmt::format("device memory planned: {:.1f} GiB of {:.1f} GiB\n", need / (1 << 30),
                           static_cast<double>(device.total_memory_bytes) / (1 << 30));
  if (need > 0.95 * static_cast<double>(device.total_memory_bytes))
    throw std::runtime_error(fmt::format("the run needs {:.1f} GiB of the GPU's {:.1f} GiB: give fewer --stages, or a shorter "
                                         "--set training.seq_len (unfused attention keeps each stage's score matrix)",
                                         need / (1 << 30), static_cast<double>(device.total_memory_bytes) / (1 << 30)));
  ExecutorOptions e;
  e.timed_steps = static_cast<int>(args.integer("--steps", 3, 1, 1000));
  e.kernel_times = !args.flag("--no-kernel-times");
  MeasuredRun measured = execute_virtual_run(plan, e);
  setup.device = device.name;
  setup.driver = device.driver_version;
  setup.clock_mhz = kernels::sm_clock_mhz();
  setup.date = today_utc();
  std::ofstream out(args.value("--out"));
  if (!out) throw UsageError("cannot write " + args.value("--out"));
  out << measured_run_json(setup, plan, measured).dump(1) << "\n";
  if (args.flag("--trace")) {
    std::ofstream trace(args.value("--trace"));
    if (!trace) throw UsageError("cannot write " + args.value("--trace"));
    trace << measured_trace_json(plan, measured).dump() << "\n";
  }
  std::cout << fmt::format("step {:.2f} ms (median of {}) on {} → {}\n", measured.median_step() * 1e3, measured.step_seconds.size(),
                           device.name, args.value("--out"));
  return 0;
}

int numerics(const Args& args) {
  const std::int64_t pp = args.integer("--pp", 4, 1, 64), m = args.integer("--microbatches", 2 * pp, 1, 4096);
  const std::string which = args.value("--schedule", "all");
  std::vector<std::string> names{"all"};
  for (const auto& [name, kind] : schedule_names()) names.push_back(name);
  if (std::find(names.begin(), names.end(), which) == names.end()) throw UsageError(plumb::cli::unknown_word_message("--schedule", which, names));
  if (kernels::list_devices().empty()) throw std::runtime_error("no GPU is visible");
  std::cout << std::unitbuf;  // each schedule's line out as it is checked, whatever happens after it
  int mismatches = 0, checked = 0;
  for (const auto& [name, kind] : schedule_names()) {
    if (which != "all" && which != name) continue;
    const std::int64_t vp = schedule_family(kind).interleaves ? args.integer("--vp", 2, 1, 16) : 1;
    PipelineSchedule schedule;
    try {
      schedule = schedule_for(kind, {.ranks = pp, .microbatches = m, .vp = vp});
    } catch (const ScheduleError& e) {
      if (which != "all") throw;
      std::cout << fmt::format("{:<11} skipped: {}\n", name, e.what());
      continue;
    }
    const NumericCheck c = check_schedule_numerics_gpu(schedule);
    const bool ok = c.matches(kGpuNumericsTolerance);
    std::cout << fmt::format("{:<11} {} ranks, {} stages × {} micro-batches, {} ops: loss {:.7g} (serial {:.7g}), largest gradient "
                             "difference {:.2e} of the largest gradient — {}\n",
                             name, pp, c.stages, c.microbatches, c.ops, c.loss_pipelined, c.loss_serial, c.max_gradient_difference,
                             ok ? "matches" : "DIFFERS");
    ++checked;
    mismatches += ok ? 0 : 1;
  }
  std::cout << fmt::format("{} of {} schedules match a serial run within {:g}\n", checked - mismatches, checked, kGpuNumericsTolerance);
  return mismatches == 0 && checked > 0 ? 0 : 1;
}

// The largest message the collective sweep's --min/--max accept: 1 TB.
constexpr double kMaxSweepBytes = 1e12;

int collectives(const Args& args) {
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

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> argv_list(argv + 1, argv + argc);
  const CommandSpec* spec = nullptr;
  if (!argv_list.empty())
    for (const CommandSpec* c : {&kBench, &kRun, &kCollectives, &kNumerics})
      if (argv_list[0] == c->name) spec = c;
  if (!spec) {
    std::cout << "usage: " << kBench.usage << "\n       " << kRun.usage << "\n       " << kCollectives.usage << "\n       " << kNumerics.usage
              << "\n";
    return argv_list.empty() ? 2 : (argv_list[0] == "--help" ? 0 : 2);
  }
  std::vector<std::string> rest(argv_list.begin() + 1, argv_list.end());
  if (plumb::cli::wants_help(rest)) {
    std::cout << plumb::cli::help_text(*spec);
    return 0;
  }
  const std::string who = "plumb-validate " + spec->name + ": ";
  try {
    Args args(*spec, rest);
    return spec == &kBench ? bench(args) : spec == &kRun ? run(args) : spec == &kNumerics ? numerics(args) : collectives(args);
  } catch (const plumb::InputError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const plumb::ScheduleError& e) {
    std::cerr << who << e.what() << "\n";
    return 2;
  } catch (const UsageError& e) {
    std::cerr << who << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << who << e.what() << "\n";
    return 70;
  }
}
