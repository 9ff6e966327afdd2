// plumb-validate: measurements on the machine at hand — the GPU (cuda backend) or this CPU (host
// backend) — for `plumb calibrate` and `plumb compare`.
//   plumb-validate bench [--backend cuda|host] [--scenario S] [--set k=v ...] [--quick] [--no-sweep] [--reps N] --out F
//   plumb-validate run SCENARIO [--backend cuda|host] [--stages K] [--layers-per-stage L] [--micro-batches M] ... --out F
//   plumb-validate collectives [--op OP|all] [--min BYTES] [--max BYTES] [--iters N] --out-dir DIR
//   plumb-validate numerics [--schedule S|all] [--pp P] [--microbatches M] [--vp V]
#include <algorithm>
#include <chrono>
#include <ctime>
#include <functional>
#include <fmt/format.h>
#include <fstream>
#include <iostream>

#include "cli/args/args.hpp"
#include "models/input/diagnostics.hpp"
#include "validate/calibrate/device_profile.hpp"
#include "validate/execute/executor.hpp"
#include "validate/host/host_bench.hpp"
#include "validate/host/host_pipeline_device.hpp"
#include "validate/run/pipeline_numerics.hpp"
#include "models/schedules/registry.hpp"
#ifdef PLUMB_HAVE_MPI
#include "validate/host/mpi_pipeline_device.hpp"
#endif
#include "validate/run/measured_run.hpp"
#include "validate/run/virtual_run.hpp"
#ifdef PLUMB_HAVE_CUDA
#include "cli/validate/cuda_tools.hpp"
#endif

namespace {

using namespace plumb;
using plumb::cli::Args;
using plumb::cli::CommandSpec;
using plumb::cli::UsageError;

const CommandSpec kBench{
    "bench",
    "plumb-validate bench [--backend cuda|host] [--scenario S] [--set key=value ...] [--quick] [--no-sweep] [--no-fp8]\n"
    "                     [--no-attention] [--reps N] --out F",
    "cuda: times the scenario's GEMMs (every stage's layer and head, forward, input and weight gradient, as plumb\n"
    "costs them) and a sweep of square sizes with cuBLASLt on GPU 0 — in bf16, and in fp8 (e4m3, per-tensor\n"
    "scales) where the GPU has fp8 (compute capability 8.9 and up) — plumb's flash attention kernel forward and\n"
    "backward at the scenario's heads and over sequences of 1K–16K tokens, a streaming copy at three sizes, and\n"
    "writes the measurement file plumb calibrate fits the GPU profile's GEMM efficiency tables, attention and\n"
    "HBM efficiencies from. Refuses a GEMM or attention pass faster than the profile's dense peak or a copy\n"
    "faster than its HBM bandwidth (a timing error, not a result).\n"
    "host: the same with the host backend's kernels on one thread of this CPU (float GEMMs through Eigen, plumb's\n"
    "blocked attention at the scenario's heads, copies of 16 and 64 MiB, and each memory-bound kernel the host run\n"
    "executes with its runs a step), squares 64–1024 as the sweep, each the median thread CPU time as the host run\n"
    "counts it; `plumb calibrate` fits the host-cpu-core profile from it.",
    {},
    {{"--backend", "B", "cuda (GPU 0; the default in CUDA builds) or host (this CPU; the default otherwise)"},
     {"--scenario", "S", "the scenario whose GEMM shapes to time (default: the sweep only)"},
     {"--set", "KEY=VALUE", "override a scenario field (repeatable)", true},
     {"--quick", "", "squares up to 4096, 5 repetitions, one copy size: a smoke test"},
     {"--no-sweep", "", "only the scenario's shapes"},
     {"--no-attention", "", "no flash attention runs"},
     {"--no-fp8", "", "bf16 GEMMs only"},
     {"--reps", "N", "timed repetitions per GEMM after warm-up (20; host 5)"},
     {"--out", "FILE", "where the measurement file goes"}}};

const CommandSpec kRun{
    "run",
    "plumb-validate run SCENARIO [--backend cuda|host] [--mpi [--dp D] | --ranks-at-once] [--set key=value ...] [--stages K] [--layers-per-stage L]\n"
    "                   [--micro-batches M] [--layer-kind moe|dense] [--sms-per-stage S] [--attention flash|unfused] [--steps N] [--no-kernel-times]\n"
    "                   --out F [--trace T]",
    "Executes the scenario's pipeline schedule with real kernels on GPU 0, shrunk to fit it: K virtual stages, each\n"
    "a CUDA green context holding its share of the SMs (--sms-per-stage; default the SMs over K in groups of 8),\n"
    "L layers per stage with the full job's shapes (a MoE layer as one EP rank of the full layout runs it, TP's\n"
    "sharding as narrower GEMMs), every op as cuBLASLt GEMMs (fp8 where the scenario trains in fp8) and the\n"
    "memory-bound kernels plumb costs, attention by plumb's flash kernel (or unfused: batched GEMMs and a softmax\n"
    "pass), sends as device copies. Times every op and kernel with CUDA events and writes the file `plumb compare`\n"
    "reads.\n"
    "--backend host runs the same plan on this CPU: each pipeline rank a thread of its own with the host backend's\n"
    "kernels (the flash kernel's blocked attention; no unfused attention), each rank timed by its own clock of\n"
    "thread CPU time (a core per rank, however many cores the machine has; one kernel at a time unless\n"
    "--ranks-at-once, so each is timed as the bench timed it), predicted by `plumb compare` as one host-cpu-core\n"
    "per stage. --mpi runs each rank as an MPI process of its own (mpirun -np PP ... --mpi); --dp D runs D replicas\n"
    "of the pipeline whose ranks all-reduce their weight gradients (mpirun -np PP×D ... --mpi --dp D).",
    {"SCENARIO"},
    {{"--backend", "B", "cuda (GPU 0; the default in CUDA builds) or host (this CPU; the default otherwise)"},
     {"--set", "KEY=VALUE", "override a scenario field (repeatable)", true},
     {"--stages", "K", "virtual pipeline ranks on the GPU (4)"},
     {"--layers-per-stage", "L", "transformer layers per model stage (1)"},
     {"--micro-batches", "M", "micro-batches per step (twice the stages)"},
     {"--layer-kind", "KIND", "moe or dense (moe for MoE models)"},
     {"--sms-per-stage", "S", "SMs per green context"},
     {"--attention", "KERNEL", "flash (plumb's kernel, the default) or unfused (batched GEMMs and a softmax pass)"},
     {"--ranks-at-once", "", "host: let the ranks' kernels run at the same time (they then share cores, caches and clock boost; "
                             "default: one at a time, each timed as the bench timed it)"},
     {"--dp", "D", "host --mpi: D data-parallel replicas of the pipeline, each rank all-reducing its weight gradients with its peers "
                   "(mpirun -np PP×D; default 1)"},
     {"--mpi", "", "host: one process per pipeline rank (mpirun -np PP plumb-validate run ... --backend host --mpi); rank 0 writes"},
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
    "plumb-validate numerics [--backend cuda|host] [--schedule S|all] [--pp P] [--microbatches M] [--vp V]",
    "Checks that a pipeline schedule computes what a serial run does, on GPU 0 with real kernels: a small model\n"
    "(per stage one SwiGLU MLP block with a residual, 64 tokens per micro-batch, cuBLASLt bf16 GEMMs with fp32\n"
    "accumulation, a squared-error loss) runs the schedule's ops on one stream per pipeline rank in the order\n"
    "plumb-validate run queues them, each waiting on CUDA events for what other ranks produce, with every buffer\n"
    "poisoned with NaN first; then serially on one stream. The loss and every weight gradient must agree within\n"
    "1e-3 (relative; only the order the micro-batches' weight gradients are summed in differs).\n"
    "--backend host: the same model in float64 on the CPU, its passes in the same queue order, against a serial run;\n"
    "they must agree within 1e-12 (float64 summation order).",
    {},
    {{"--backend", "B", "cuda (GPU 0; the default in CUDA builds) or host (this CPU; the default otherwise)"},
     {"--schedule", "S", "a schedule name, or all (default)"},
     {"--pp", "P", "pipeline ranks (4)"},
     {"--microbatches", "M", "micro-batches (twice the ranks)"},
     {"--vp", "V", "model stages per rank for interleaved (2)"}}};

std::string today_utc() {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  return fmt::format("{:04}-{:02}-{:02}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
}


// The backends this build has: host always, cuda where CUDA was found (and then the default).
const std::vector<std::string>& backends() {
#ifdef PLUMB_HAVE_CUDA
  static const std::vector<std::string> names{"cuda", "host"};
#else
  static const std::vector<std::string> names{"host"};
#endif
  return names;
}

std::string backend(const Args& args) {
  const std::string b = args.value("--backend", backends().front());
  if (std::find(backends().begin(), backends().end(), b) == backends().end()) {
    if (b == "cuda") throw UsageError("--backend cuda: this plumb-validate was built without CUDA (build the cuda-release preset)");
    throw UsageError(plumb::cli::unknown_word_message("--backend", b, backends()));
  }
  return b;
}

int bench(const Args& args) {
  if (!args.flag("--out")) throw UsageError("--out FILE is required");
#ifdef PLUMB_HAVE_CUDA
  if (backend(args) == "cuda") return plumb::cli::gpu_bench(args, today_utc());
#else
  backend(args);
#endif
  std::optional<Job> job;
  if (args.flag("--scenario")) job = load_scenario(args.value("--scenario"), args.values("--set"));
  HostBenchOptions o;
  o.sweep = !args.flag("--no-sweep");
  o.attention = !args.flag("--no-attention");
  o.reps = static_cast<int>(args.integer("--reps", args.flag("--quick") ? 3 : 5, 1, 10000));
  const Json doc = host_bench(job ? &*job : nullptr, o, bundled_gpu_profile(host_device_name()), today_utc(), std::cerr);
  std::ofstream out(args.value("--out"));
  if (!out) throw UsageError("cannot write " + args.value("--out"));
  out << doc.dump(1) << "\n";
  std::cout << fmt::format("{} GEMMs, {} attention calls and {} copies and memory-bound kernels timed on {} → {}\n", doc["gemm"].size(),
                           doc.contains("attention") ? doc["attention"].size() : 0, doc.contains("memory") ? doc["memory"].size() : 0,
                           host_device_name(), args.value("--out"));
  return 0;
}

int run(const Args& args) {
  if (!args.flag("--out")) throw UsageError("--out FILE is required");
  const std::string b = backend(args);
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
  const bool mpi = args.flag("--mpi");
  if (mpi && b != "host") throw UsageError("--mpi runs the host backend's ranks as processes: give --backend host");
  if (args.flag("--ranks-at-once") && b != "host") throw UsageError("--ranks-at-once is the host backend's: give --backend host");
  o.dp = args.integer("--dp", 1, 1, 1024);
  if (o.dp > 1 && !mpi) throw UsageError("--dp runs replicas as MPI processes: give --backend host --mpi (mpirun -np PP×D ...)");
#ifndef PLUMB_HAVE_MPI
  if (mpi) throw UsageError("--mpi: this plumb-validate was built without MPI (install libopenmpi-dev and rebuild)");
#endif
  if (b == "host") {
    if (args.flag("--ranks-at-once") && mpi) throw UsageError("--ranks-at-once is the threaded host backend's; MPI processes always run at once");
    if (o.sms_per_stage > 0) throw UsageError("--sms-per-stage splits a GPU; the host backend gives every rank a core of its own");
    if (o.attention == AttentionKernel::unfused) throw UsageError("--attention unfused: the host backend runs the flash kernel's blocked attention only");
    o.stage_per_profile = true;
  }
  Job full = load_scenario(setup.scenario, setup.overrides);
  if (b == "host") {
    std::optional<GpuSpec> core = bundled_gpu_profile(host_device_name());
    if (!core) throw std::runtime_error("the bundled host-cpu-core profile is missing from hw_profiles/gpus");
    full.cluster.gpu = *core;
  }
#ifdef PLUMB_HAVE_CUDA
  else
    plumb::cli::use_gpu_at_hand(full);
#endif
  const VirtualRun plan = plan_virtual_run(full, o);
  std::size_t kernels_per_step = 0;
  for (const RunOp& op : plan.order)
    kernels_per_step += plan.kernels(plan.schedule.ops[static_cast<std::size_t>(op.rank)][static_cast<std::size_t>(op.index)]).size();
  std::unique_ptr<PipelineDevice> device;
#ifdef PLUMB_HAVE_CUDA
  if (b == "cuda") device = plumb::cli::gpu_pipeline_device(plan);
#endif
#ifdef PLUMB_HAVE_MPI
  if (mpi) device = make_mpi_pipeline_device(plan);
  const bool writes = mpi_world_rank() == 0;  // under --mpi, rank 0 reports for all
#else
  const bool writes = true;
#endif
  if (!device) device = make_host_pipeline_device(plan, !args.flag("--ranks-at-once"));
  const DeviceIdentity id = device->identity();
  if (writes)
    std::cerr << fmt::format("{}: {} ranks × {} {}, {} stages of {} layer(s), {} micro-batches, {} ops and {} kernels per step\n", id.name,
                           plan.job.layout.pp, device->units(0), b == "host" ? "core" : "SMs", plan.job.layout.stages(), o.layers_per_stage,
                           plan.job.microbatches(), plan.order.size(), kernels_per_step);
  ExecutorOptions e;
  e.timed_steps = static_cast<int>(args.integer("--steps", 3, 1, 1000));
  e.kernel_times = !args.flag("--no-kernel-times");
  MeasuredRun measured = execute_virtual_run(plan, *device, e);
  device.reset();
#ifdef PLUMB_HAVE_MPI
  if (mpi) mpi_finish();
#endif
  if (!writes) return 0;
  setup.device = id.name;
  setup.driver = id.driver;
  setup.clock_mhz = static_cast<int>(id.clock_mhz);
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
                           id.name, args.value("--out"));
  return 0;
}

#ifndef PLUMB_HAVE_CUDA
[[noreturn]] void needs_cuda(const std::string& command) {
  throw UsageError(fmt::format("{} needs a GPU: this plumb-validate was built without CUDA (build the cuda-release preset)", command));
}
#endif

// Each schedule (or one) checked by `check` against a serial run: the loss and every weight gradient
// within `tolerance`.
int numerics_over_schedules(const Args& args, const std::function<NumericCheck(const PipelineSchedule&)>& check, double tolerance) {
  const std::int64_t pp = args.integer("--pp", 4, 1, 64), m = args.integer("--microbatches", 2 * pp, 1, 4096);
  const std::string which = args.value("--schedule", "all");
  std::vector<std::string> names{"all"};
  for (const auto& [name, kind] : schedule_names()) names.push_back(name);
  if (std::find(names.begin(), names.end(), which) == names.end()) throw UsageError(plumb::cli::unknown_word_message("--schedule", which, names));
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
    const NumericCheck c = check(schedule);
    const bool ok = c.matches(tolerance);
    std::cout << fmt::format("{:<11} {} ranks, {} stages × {} micro-batches, {} ops: loss {:.10g} (serial {:.10g}), largest gradient "
                             "difference {:.2e} of the largest gradient — {}\n",
                             name, pp, c.stages, c.microbatches, c.ops, c.loss_pipelined, c.loss_serial, c.max_gradient_difference,
                             ok ? "matches" : "DIFFERS");
    ++checked;
    mismatches += ok ? 0 : 1;
  }
  std::cout << fmt::format("{} of {} schedules match a serial run within {:g}\n", checked - mismatches, checked, tolerance);
  return mismatches == 0 && checked > 0 ? 0 : 1;
}

// host: validate/pipeline_numerics's float64 model, its passes in the executor's queue order, exact
// but for float64 summation order; cuda: the same model with the GPU's kernels and streams.
int numerics(const Args& args) {
  if (backend(args) == "host")
    return numerics_over_schedules(args, [](const PipelineSchedule& s) { return check_schedule_numerics(s); }, 1e-12);
#ifdef PLUMB_HAVE_CUDA
  return numerics_over_schedules(args, plumb::cli::gpu_numerics_check, plumb::cli::gpu_numerics_tolerance());
#else
  return 2;  // unreachable: backend() refuses cuda without CUDA
#endif
}

int collectives(const Args& args) {
#ifdef PLUMB_HAVE_CUDA
  return plumb::cli::gpu_collectives(args);
#else
  (void)args;
  needs_cuda("collectives");
#endif
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
