#include <iostream>

#include "cli/commands.hpp"
#include "cli/report/ops_report.hpp"

namespace plumb::cli {
namespace {

int run_ops(const Args& args) {
  Job job = load_scenario(args.positional(0), args.values("--set"));
  if (args.flag("--json")) std::cout << ops_report_json(job).dump(2) << "\n";
  else std::cout << ops_report_table(job);
  return kOk;
}

}  // namespace

const Command& ops_command() {
  static const Command command{
      {"ops",
       "plumb ops SCENARIO [--json] [--set key=value ...]",
       "Every op of one layer per pipeline stage, as one GPU runs it for one micro-batch: FLOPs and bytes\n"
       "of the forward, input-gradient and weight-gradient passes, roofline time at the datasheet peaks\n"
       "times the GPU profile's measured efficiencies (GEMMs by size and dtype, fused attention forward and\n"
       "backward, HBM), tensor-core work at the pace of the job's slowest chip (the profile's chip_spread),\n"
       "and whether it is compute- or memory-bound. An op the framework runs as separate linears\n"
       "(training.projections \"separate\": torchtitan's wq, wk, wv) is named with its GEMM count and\n"
       "priced GEMM by GEMM, each reading the whole input.",
       {"SCENARIO"},
       {{"--json", "", "print stages[i].ops[j].{name, forward, input_grad, weight_grad}.{flops, bytes, time_s, bound} (and linears: the separate GEMMs' output widths)"},
        {"--set", "KEY=VALUE", "override a scenario field (repeatable)", true}}},
      run_ops};
  return command;
}

}  // namespace plumb::cli
