#include <iostream>

#include "cli/commands.hpp"
#include "cli/report/trace_report.hpp"

namespace plumb::cli {
namespace {

int run_trace(const Args& args) {
  KernelClassifier classes = args.flag("--classes") ? KernelClassifier::from_file(args.value("--classes")) : KernelClassifier::bundled();
  const GpuTrace trace = read_gpu_trace(args.positional(0));
  const TraceSummary summary = summarize_trace(trace, classes);
  const TraceCollectiveLogs collectives = collective_logs_from_trace(summary, args.integer("--gpus-per-node", 8, 1, 1'000'000));
  if (args.flag("--json")) std::cout << trace_json(summary, collectives).dump(2) << "\n";
  else std::cout << trace_text(summary, static_cast<std::size_t>(args.integer("--unknown", 20, 0, 1'000'000)), collectives);
  return kOk;
}

}  // namespace

const Command& trace_command() {
  static const Command command{
      {"trace",
       "plumb trace TRACE.json[.gz] [--json] [--classes F] [--unknown N] [--gpus-per-node N]",
       "Reads a PyTorch profiler trace (the Chrome/Kineto JSON torch.profiler writes, plain or gzip) as a stream,\n"
       "so its size does not matter, and prints where the GPU time went: each kernel class (GEMM, grouped GEMM,\n"
       "attention forward and backward, NCCL collectives by op, DeepEP dispatch/combine/notify, fp8 casts, norms,\n"
       "RoPE, activations, MoE routing, elementwise, copies) with its kernels, time and streams; each stream's busy\n"
       "time, launch gaps and role (compute or communication); how much communication ran under compute and how\n"
       "much was exposed; and every kernel no class rule knew, by name. Classes come from the rules in\n"
       "hw_profiles/kernel_classes.json (or --classes), first match winning. Where the trace holds the host's\n"
       "launch calls, each stream's gaps are split into the device's own and waits on the host, and the host's\n"
       "pace is given; where PyTorch annotated its collectives' kernels, each collective, group and message size\n"
       "with its fastest and median kernel and bus bandwidth (groups placed --gpus-per-node to a node).",
       {"TRACE.json[.gz]"},
       {{"--json", "", "print classes[], streams[], the overlap and unknown[] as JSON (times in seconds)"},
        {"--classes", "F", "another kernel class table in the format of hw_profiles/kernel_classes.json"},
        {"--unknown", "N", "how many unknown kernel names to list (20)"},
        {"--gpus-per-node", "N", "GPUs a node, to tell which collectives crossed nodes (8)"}}},
      run_trace};
  return command;
}

}  // namespace plumb::cli
