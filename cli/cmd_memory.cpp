#include <fmt/format.h>
#include <iostream>

#include "cli/commands.hpp"
#include "models/memory/memory.hpp"
#include "cli/report/memory_report.hpp"

namespace plumb::cli {
namespace {

int run_memory(const Args& args) {
  Job job = load_scenario(args.positional(0), args.values("--set"));
  MemoryPlan plan = plan_memory(job);
  if (args.flag("--json")) std::cout << memory_report_json(job, plan).dump(2) << "\n";
  else std::cout << memory_report_table(job, plan);
  return plan.fits() ? kOk : kInfeasible;
}

}  // namespace

const Command& memory_command() {
  static const Command command{
      {"memory",
       "plumb memory SCENARIO [--json] [--set key=value ...]",
       "Memory per pipeline stage — weights, gradients, optimizer states (ZeRO), activations of the\n"
       "micro-batches in flight at the schedule's peak, CUDA context — and whether it fits the GPU.\n"
       "Exit code 3 when the peak stage does not fit.",
       {"SCENARIO"},
       {{"--json", "", "print the report as JSON"},
        {"--set", "KEY=VALUE", "override a scenario field, e.g. --set parallel.pp=8 (repeatable)", true}}},
      run_memory};
  return command;
}

}  // namespace plumb::cli
