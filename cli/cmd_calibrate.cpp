#include <filesystem>
#include <fmt/format.h>
#include <iostream>

#include "cli/commands.hpp"
#include "models/input/catalogue.hpp"
#include "cli/report/calibrate_report.hpp"
#include "validate/calibrate/device_profile.hpp"
#include "validate/calibrate/simumax_system.hpp"
#include "cli/report/trace_report.hpp"
#include "validate/run/trace_collectives.hpp"

namespace plumb::cli {
namespace {

Json read_json(const std::string& path) {
  Diagnostics d;
  SourceFile src{path, std::filesystem::path(path).parent_path(), &d, {}};
  Json doc = load_json_file(path, src);
  d.throw_if_any();
  return doc;
}

// Writes a calibrated profile only if plumb can read it back: a fitted figure outside what a profile may
// hold (an efficiency under 1% of the base profile's peak says the base is not of the device measured)
// is refused, naming the figure, rather than written for a later run to trip over.
void write_profile(const std::string& path, const Json& profile, bool fabric) {
  Diagnostics d;
  SourceFile src{path, std::filesystem::path(path).parent_path(), &d, {}};
  if (fabric) read_fabric(profile, "", src);
  else read_gpu(profile, "", src);
  std::vector<Diagnostic> refused;
  for (const Diagnostic& x : d.list())
    if (x.pointer.rfind("/sources", 0) != 0)  // a figure left out takes its source with it
      refused.push_back({path, x.pointer, x.message + " — not written: the fit left the range a profile holds; is the base profile (--profile) "
                                                     "of the device that was measured?"});
  if (!refused.empty()) throw InputError(refused);
  write_file(path, profile.dump(2) + "\n");
}

// A profile by catalogue name (GPU first, then fabric) or by path.
ProfileRef find_profile(const std::string& ref) {
  std::optional<ProfileRef> found = find_profile_file(ref);
  if (!found) throw UsageError(unknown_word_message("--profile", ref, profile_names()) + " (or a path to a profile file)");
  return *found;
}

// Without --profile, GPU measurements name their device: its bundled profile is the one to calibrate.
std::string profile_to_calibrate(const Args& args, const std::vector<Measurements>& measured) {
  if (args.flag("--profile")) return args.value("--profile");
  if (measured.empty()) throw UsageError("--profile P is required for nccl-tests logs: the fabric profile to calibrate");
  const std::string& first = measured.front().file;
  const std::string& device = measured.front().device;
  std::optional<GpuSpec> bundled = bundled_gpu_profile(device);
  if (!bundled) throw UsageError(fmt::format("no bundled GPU profile matches \"{}\" (from {}): give --profile P", device, first));
  std::cerr << fmt::format("calibrating {} (the bundled profile of {}, the device in {})\n", bundled->id, device, first);
  return bundled->id;
}

// The scenario's framework profile with the host time a kernel measured from the trace: a document that
// starts from it ("base") and sets training.host_overhead with its source; standalone where the scenario
// names no framework. Written only if plumb reads it back.
void write_framework(const std::string& path, const Job& job, const TraceCalibration& c, const std::string& trace) {
  if (!c.host_overhead)
    throw UsageError(fmt::format("--framework-out: {} holds too few launch calls (cuda_runtime events, {} or more) to measure the host's "
                                 "time a kernel",
                                 trace, kFewestKernelGaps));
  Json doc = Json::object();
  const std::string& base = job.framework.id;
  if (!base.empty() && base != "(inline)") {
    const bool is_path = base.find('/') != std::string::npos || base.ends_with(".json");
    doc["base"] = is_path ? std::filesystem::absolute(base).string() : base;
  }
  doc["name"] = fmt::format("{}, host time calibrated from {}", job.framework.name.empty() ? std::string("a framework") : job.framework.name,
                            trace);
  doc["training"] = {{"host_overhead", fmt::format("{:.2f}us", 1e6 * *c.host_overhead)}};
  doc["sources"] = {{"training.host_overhead",
                     fmt::format("plumb calibrate --trace {}: the trace's launch calls at their median pace on their host threads, spread "
                                 "over the {} kernels plumb prices for the stage's forward and backward",
                                 trace, c.plumb_kernels)}};
  Diagnostics d;
  SourceFile src{path, std::filesystem::path(path).parent_path(), &d, {}};
  Json probe = {{"framework", doc}};
  apply_framework(probe, src);
  d.throw_if_any();
  write_file(path, doc.dump(2) + "\n");
}

// plumb calibrate --trace FILE --scenario S: the scenario's GPU profile (or --profile's) fitted to one
// stage's kernel time in a profiler trace.
int run_calibrate_trace(const Args& args) {
  if (!args.flag("--scenario")) throw UsageError("--trace needs --scenario S: the job the trace ran, whose stage is priced");
  if (!args.positionals().empty() || !args.values("--nccl-tests").empty())
    throw UsageError("--trace calibrates from the trace alone: no measurement files or nccl-tests logs beside it");
  Job job = load_scenario(args.value("--scenario"), args.values("--set"));
  ProfileRef ref = find_profile(args.value("--profile", job.cluster.gpu.id));
  if (ref.fabric) throw UsageError("a trace calibrates a GPU profile, not the fabric " + ref.path.string());
  Diagnostics d;
  SourceFile src{ref.path.string(), ref.path.parent_path(), &d, {}};
  Json raw = load_profile_document(ref.path, false, src);
  d.throw_if_any();
  KernelClassifier classes = KernelClassifier::bundled();
  const GpuTrace gpu_trace = read_gpu_trace(args.value("--trace"));
  const TraceSummary trace = summarize_trace(gpu_trace, classes);
  const std::int64_t stage = args.integer("--stage", 0, 0, 100'000);
  const TraceCalibration c = calibrate_from_trace(raw, job, trace, stage);
  // The fabric, from the collectives' kernels that carry their message.
  std::optional<TraceCollectiveLogs> collectives;
  Calibration fabric;
  if (args.flag("--fabric-out")) {
    collectives = collective_logs_from_trace(trace, job.cluster.fabric.gpus_per_node);
    if (collectives->logs.empty()) {
      std::string why;
      for (const std::string& w : collectives->left_out) why += "\n  " + w;
      throw UsageError(fmt::format("--fabric-out: {} holds no collective kernels with PyTorch's annotation of their message in two sizes or "
                                   "more (a trace of PyTorch's NCCL process group, PyTorch 2.1 or later, has them){}",
                                   trace.file, why));
    }
    ProfileRef fabric_ref = find_profile(job.cluster.fabric.id);
    SourceFile fabric_src{fabric_ref.path.string(), fabric_ref.path.parent_path(), &d, {}};
    Json fabric_raw = load_profile_document(fabric_ref.path, true, fabric_src);
    d.throw_if_any();
    fabric = calibrate_fabric(fabric_raw, job.cluster.gpu, job.cluster.fabric, collectives->logs);
  }
  write_profile(args.value("-o"), c.profile, false);
  if (collectives) write_profile(args.value("--fabric-out"), fabric.profile, true);
  if (args.flag("--framework-out")) write_framework(args.value("--framework-out"), job, c, trace.file);
  // The side by side with what was calibrated: plumb compare's table, and its timeline with --timeline.
  Job calibrated = job;
  SourceFile out_src{args.value("-o"), {}, &d, {}};
  calibrated.cluster.gpu = *read_gpu(c.profile, "", out_src);
  set_job_size(calibrated.cluster);
  if (c.host_overhead) calibrated.training.host_overhead = *c.host_overhead;
  if (collectives) calibrated.cluster.fabric = *read_fabric(fabric.profile, "", out_src);
  d.throw_if_any();
  const TraceComparison comparison = compare_trace(calibrated, trace, stage);
  if (args.flag("--timeline"))
    write_file(args.value("--timeline"), side_by_side_timeline(calibrated, gpu_trace, classes, stage).dump() + "\n");
  if (args.flag("--json")) {
    Json out = trace_calibration_json(c);
    if (collectives) {
      out["fabric"] = calibration_json(fabric);
      out["fabric"]["left_out"] = collectives->left_out;
    }
    out["comparison"] = trace_comparison_json(comparison);
    std::cout << out.dump(2) << "\n";
    return kOk;
  }
  std::cout << trace_calibration_report(c) << fmt::format("\ncalibrated GPU profile → {}\n", args.value("-o"));
  if (collectives) {
    std::cout << fmt::format("\nthe fabric ({}) fitted to {} collective kernels of the trace, the fastest of each message size:\n",
                             job.cluster.fabric.id, collectives->kernels)
              << calibration_report(fabric);
    for (const std::string& w : collectives->left_out) std::cout << "not fitted: " << w << "\n";
    std::cout << fmt::format("\ncalibrated fabric profile → {}\n", args.value("--fabric-out"));
  }
  std::cout << fmt::format("\nplumb compare with the calibrated profile{}:\n", collectives ? "s" : "") << trace_comparison_text(comparison);
  if (args.flag("--framework-out"))
    std::cout << fmt::format("framework profile with the host's time a kernel → {} (use it with --set framework={})\n",
                             args.value("--framework-out"), args.value("--framework-out"));
  if (args.flag("--timeline")) std::cout << fmt::format("side-by-side timeline (Perfetto) → {}\n", args.value("--timeline"));
  return kOk;
}

int run_calibrate(const Args& args) {
  if (!args.flag("-o")) throw UsageError("-o FILE is required: where the calibrated profile goes");
  if (args.flag("--trace")) {
    if (args.flag("--clock")) throw UsageError("--clock fits from GEMM measurements, --trace from a profiler trace: give one");
    return run_calibrate_trace(args);
  }
  if (args.flag("--clock") && !args.values("--nccl-tests").empty())
    throw UsageError("--clock fits a GPU's settled clock from GEMM measurements: no nccl-tests logs beside it");
  if (args.flag("--scenario") || args.flag("--stage") || args.flag("--set") || args.flag("--fabric-out") || args.flag("--timeline") ||
      args.flag("--framework-out"))
    throw UsageError("--scenario, --stage, --set, --fabric-out, --framework-out and --timeline go with --trace");
  std::vector<Measurements> measured;
  for (const std::string& file : args.positionals()) {
    const Json doc = read_json(file);
    measured.push_back(is_simumax_system(doc) ? read_simumax_system(doc, file) : read_measurements(doc, file));
  }
  ProfileRef ref = find_profile(profile_to_calibrate(args, measured));
  Diagnostics d;
  SourceFile src{ref.path.string(), ref.path.parent_path(), &d, {}};
  // A derived profile is calibrated whole: the file written stands alone, wherever it goes.
  Json raw = load_profile_document(ref.path, ref.fabric, src);
  d.throw_if_any();
  std::optional<GpuSpec> gpu = read_gpu(ref.fabric ? Json(args.value("--gpu", "h100-sxm")) : Json(ref.path.string()),
                                        ref.fabric ? "--gpu" : "", src);
  d.throw_if_any();
  Calibration c;
  if (ref.fabric) {
    std::optional<FabricSpec> fabric = read_fabric(Json(ref.path.string()), "", src);
    d.throw_if_any();
    std::vector<NcclTestsLog> logs;
    for (const std::string& file : args.values("--nccl-tests")) logs.push_back(parse_nccl_tests_log(read_text(file), file));
    if (logs.empty()) throw UsageError("a fabric profile is calibrated from nccl-tests logs: give --nccl-tests LOG (repeatable)");
    if (args.positionals().size() > 0) throw UsageError("GEMM measurements calibrate a GPU profile, not the fabric " + args.value("--profile"));
    c = calibrate_fabric(raw, *gpu, *fabric, logs);
    write_profile(args.value("-o"), c.profile, true);
    if (args.flag("--json")) std::cout << calibration_json(c).dump(2) << "\n";
    else std::cout << calibration_report(c) << fmt::format("\ncalibrated fabric profile → {}\n", args.value("-o"));
    return kOk;
  }
  if (!args.values("--nccl-tests").empty()) throw UsageError("nccl-tests logs calibrate a fabric profile, not the GPU " + args.value("--profile"));
  if (measured.empty()) throw UsageError("a GPU profile is calibrated from GEMM measurements: give MEASUREMENTS.json");
  if (args.flag("--clock")) {
    const ClockFit f = calibrate_clock(raw, *gpu, measured);
    write_profile(args.value("-o"), f.profile, false);
    if (args.flag("--json")) std::cout << clock_fit_json(f).dump(2) << "\n";
    else std::cout << clock_fit_report(f, ref.path.stem().string()) << fmt::format("\ncalibrated GPU profile → {}\n", args.value("-o"));
    return kOk;
  }
  c = calibrate_gpu(raw, *gpu, measured);
  if (c.gemm.empty() && c.shares.empty() && !c.kernel_overhead)
    throw UsageError("the measurements hold fewer than two GEMMs of any one dtype, no memory or attention runs and no launches: nothing to fit");
  write_profile(args.value("-o"), c.profile, false);
  if (args.flag("--json")) {
    std::cout << calibration_json(c).dump(2) << "\n";
    return kOk;
  }
  std::cout << calibration_report(c);
  for (const Measurements& m : measured)
    for (const std::string& w : m.left_out) std::cout << fmt::format("not read from {}: {}\n", m.file, w);
  std::cout << fmt::format("\ncalibrated GPU profile → {}\n", args.value("-o"));
  return kOk;
}

}  // namespace

const Command& calibrate_command() {
  static const Command command{
      {"calibrate",
       "plumb calibrate [MEASUREMENTS.json...] [--nccl-tests LOG ...] [--profile P] [--clock] -o OUT.json [--gpu G] [--json] | plumb calibrate --trace TRACE --scenario S [--stage K] [--profile P] -o OUT.json [--fabric-out FABRIC.json] [--framework-out FRAMEWORK.json] [--timeline F]",
       "Fits a profile to measurements by least squares and writes the calibrated profile (each fitted\n"
       "figure's source says how it was fitted). A GPU profile (--profile h100-sxm) gets its GEMM efficiency\n"
       "tables from plumb's GEMM measurements (e = e_max·F/(F + F_half) over FLOPs F; bf16 and, where\n"
       "measured, fp8), its HBM efficiency from the streaming-kernel runs, its attention efficiencies (forward,\n"
       "backward) from the flash attention runs and its kernel overhead from the empty-kernel launches in them.\n"
       "A SimuMax system config (configs/system/*.json, measured on the machine it names) counts as GEMM\n"
       "measurements: its matmul and group_matmul tables (Transformer Engine GEMMs timed back to back) become\n"
       "plumb's GEMMs by pass; rates measured back to back (SimuMax's, or a file marked \"sustained\": true) are\n"
       "divided by the profile's sustained_compute_scale (attention's by sustained_attention_scale where it has\n"
       "one), which the calibrated profile keeps; its other tables are listed as not read. With --clock, only the\n"
       "machine's settled clock is fitted: the median, over its dense bf16 forward and input-gradient GEMMs of a\n"
       "TFLOP or more timed back to back, of the profile's time over the measured one, which multiplies the\n"
       "profile's sustained scales (GEMM, fp8, attention) and leaves its shape model as it is. For a machine\n"
       "that runs the catalogue's kernels slower than its boards do (a lower power limit), without fitting\n"
       "its shapes. It prints that median by size, and, not fitted, the shorter GEMMs' (0.05-1 TFLOP) time\n"
       "at the fitted clock over the measured. A fabric profile\n"
       "(--profile dgx-h100-ndr) gets its NVLink, NVLS or NIC bandwidth from nccl-tests logs (α + bytes·β per log,\n"
       "by where the log ran: one node or several). Prints each fit with its error and, for collectives,\n"
       "plumb's prediction with the calibrated profile against every measured size.\n"
       "With --trace (a PyTorch profiler trace of one pipeline stage's forward and backward) and --scenario (the\n"
       "job it ran; --stage the stage, 0 by default), the scenario's GPU profile (or --profile) is fitted so that\n"
       "the stage, priced with it, spends the trace's GPU time per class: every GEMM figure scaled alike to the\n"
       "GEMM kernels, the fused-attention efficiencies to the attention forward and backward kernels, and\n"
       "hbm_efficiency to the memory-bound kernels; the stage's span before and after is printed, not fitted.\n"
       "Where the trace recorded shapes (record_shapes=True), the GEMMs are fitted per shape instead:\n"
       "gemm_model.<dtype>'s ceiling and K overhead by least squares over each GEMM op's time at its (m, n, k).\n"
       "Where the trace holds the host's launch calls, kernel_overhead is set to the median gap before a compute\n"
       "kernel launched while its stream was busy. With --fabric-out, the scenario's fabric profile is fitted as\n"
       "from nccl-tests logs to the collectives' kernels that PyTorch annotated with their message (size, dtype,\n"
       "group): one fit per collective, group size and node count, over the fastest kernel of each size (the one\n"
       "least delayed by its peers). training.host_overhead (the framework's host time a kernel) is measured\n"
       "from the trace's launch calls and printed; --framework-out writes the scenario's framework profile with it.\n"
       "Then prints plumb compare's side by side of the stage with the calibrated\n"
       "profiles (and with --timeline writes its Perfetto timeline): a launch script and a trace give a\n"
       "scenario (plumb import), calibrated profiles and the side by side in two commands.",
       {"[MEASUREMENTS.json...]"},
       {{"--nccl-tests", "LOG", "an nccl-tests output log (all_reduce_perf, …); repeatable", true},
        {"--profile", "P", "the profile to calibrate: a catalogue name or a path (GPU measurements: their device's, by default)"},
        {"-o", "FILE", "where the calibrated profile is written"},
        {"--clock", "", "fit only the settled clock (one factor on the sustained scales) from long GEMMs timed back to back"},
        {"--gpu", "G", "for a fabric: the GPU of its nodes (h100-sxm)"},
        {"--json", "", "print the fits as JSON: fits[].{term, alpha_s, bus_bandwidth, value, rms_relative_error, …}, profile"},
        {"--trace", "FILE", "a PyTorch profiler trace (plain or gzip) of one stage's forward and backward to fit the GPU profile to"},
        {"--scenario", "S", "with --trace: the scenario the trace ran"},
        {"--stage", "K", "with --trace: the model stage the trace ran (0)"},
        {"--set", "KEY=VALUE", "with --trace: override a scenario field (repeatable)", true},
        {"--fabric-out", "FILE", "with --trace: also fit the scenario's fabric profile to the trace's annotated collective kernels, written here"},
        {"--timeline", "FILE", "with --trace: write the measured kernels beside plumb's run of the stage with the calibrated profiles (Perfetto)"},
        {"--framework-out", "FILE", "with --trace: write the scenario's framework profile with training.host_overhead measured from the trace's launch calls"}}},
      run_calibrate};
  return command;
}

}  // namespace plumb::cli
