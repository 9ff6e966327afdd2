#include <fmt/format.h>
#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#ifdef PLUMB_HAVE_MPI
#include "cli/mpi_plan.hpp"
#endif
#include "cli/progress.hpp"
#include "cli/report/plan_report.hpp"

namespace plumb::cli {
namespace {

PlanOptions plan_options(const Args& args) {
  PlanOptions o;
  o.threads = static_cast<int>(args.integer("--threads", 0, 1, 1024));
  o.simulate = !args.flag("--no-simulate");
  o.progress = progress_bar("plumb plan", "layouts");
  return o;
}

// Prints the outcome as the options ask; exit 3 when nothing qualifies.
int report(const Job& base, const PlanSpace& space, const PlanOutcome& o, const Args& args) {
  const auto rows = static_cast<std::size_t>(args.integer("--rows", 20, 1, 1'000'000));
  if (args.flag("--csv")) write_file(args.value("--csv"), plan_csv(o));
  if (args.flag("--svg")) write_file(args.value("--svg"), plan_svg(base.name, o));
  if (o.ranked.empty()) {
    if (args.flag("--json")) std::cout << plan_json(base, space, o, rows).dump(2) << "\n";
    else std::cout << infeasible_explanation(o);
    return kInfeasible;
  }
  if (args.flag("--json")) std::cout << plan_json(base, space, o, rows).dump(2) << "\n";
  else std::cout << plan_table(base, space, o, rows);
  if (args.flag("--emit")) {
    std::string what = args.value("--emit");
    if (what != "megatron" && what != "torchtitan") throw UsageError(unknown_word_message("--emit", what, {"megatron", "torchtitan"}));
    std::string why;
    Job best = *job_at(base, space, point_at(space, o.ranked.front().index), &why);
    if (what == "megatron") std::cout << (args.flag("--json") ? "" : "\nMegatron-LM flags of the best layout:\n") << megatron_flags(best);
    else std::cout << (args.flag("--json") ? "" : "\ntorchtitan settings of the best layout:\n") << torchtitan_toml(best);
  }
  return kOk;
}

std::pair<std::uint64_t, std::uint64_t> parse_shard(const std::string& text) {
  auto slash = text.find('/');
  try {
    if (slash != std::string::npos) {
      std::uint64_t i = std::stoull(text.substr(0, slash)), n = std::stoull(text.substr(slash + 1));
      if (n >= 1 && i < n) return {i, n};
    }
  } catch (const std::exception&) {
  }
  throw UsageError(fmt::format("--shard {}: expected I/N with 0 ≤ I < N, e.g. --shard 0/4", text));
}

int run_plan_command(const Args& args) {
  Job base = load_scenario(args.positional(0), args.values("--set"));
  PlanSpace space = read_plan_space(base);
  PlanOptions options = plan_options(args);
  if (args.flag("--shard")) {
    std::tie(options.shard, options.shards) = parse_shard(args.value("--shard"));
    if (!args.flag("--out")) throw UsageError("--shard needs --out FILE for its partial result (combine them with plumb merge)");
    options.simulate = false;  // plumb merge simulates the best of all shards together
    PlanOutcome o = run_plan(base, space, options);
    write_file(args.value("--out"), partial_json(base.name, o, options.shard, options.shards, space.size()).dump() + "\n");
    std::cout << fmt::format("shard {}/{}: {} layouts, {} feasible, {:.2f} s → {}\n", options.shard, options.shards, o.evaluated,
                             o.feasible, o.seconds, args.value("--out"));
    return kOk;
  }
  if (args.flag("--mpi")) {
#ifdef PLUMB_HAVE_MPI
    std::optional<PlanOutcome> merged = plan_over_mpi(base, space, options);
    return merged ? report(base, space, *merged, args) : kOk;
#else
    throw UsageError("--mpi: this plumb was built without MPI (install libopenmpi-dev and rebuild); use --shard I/N and plumb merge");
#endif
  }
  return report(base, space, run_plan(base, space, options), args);
}

int run_merge_command(const Args& args) {
  Job base = load_scenario(args.positional(0), args.values("--set"));
  PlanSpace space = read_plan_space(base);
  std::vector<PlanOutcome> parts;
  for (std::size_t i = 1; i < args.positionals().size(); ++i) {
    const std::string& file = args.positionals()[i];
    Diagnostics diagnostics;
    SourceFile src{file, {}, &diagnostics, {}};
    Json doc = load_json_file(file, src);
    diagnostics.throw_if_any();
    parts.push_back(read_partial(doc, file, space.size()));
  }
  return report(base, space, merge_plans(base, space, std::move(parts), plan_options(args)), args);
}

const std::vector<OptionSpec>& output_options() {
  static const std::vector<OptionSpec> options{
      {"--json", "", "print the result as JSON (evaluated, feasible, rejected, seconds, best[], pareto[], near_misses[])"},
      {"--csv", "FILE", "write every feasible layout, ranked, as CSV"},
      {"--svg", "FILE", "plot the Pareto frontier and the time breakdown of the best layouts"},
      {"--rows", "N", "layouts in the table and in best[] (20)"},
      {"--emit", "megatron|torchtitan", "print the best layout as Megatron-LM flags or as torchtitan TOML settings"},
      {"--threads", "N", "threads (default: every core)"},
      {"--no-simulate", "", "rank by the analytic estimate only"},
      {"--set", "KEY=VALUE", "override a scenario field, e.g. --set plan.max_days=60 (repeatable)", true}};
  return options;
}

}  // namespace

const Command& plan_command() {
  static const Command command{
      {"plan",
       "plumb plan SCENARIO [--json] [--csv F] [--svg F] [--rows N] [--emit megatron|torchtitan] [--threads N]\n"
       "           [--shard I/N --out F] [--mpi] [--no-simulate] [--set key=value ...]",
       "Searches the layouts of the scenario's \"plan\" section (parallel sizes, ZeRO, schedules, micro-batch,\n"
       "recomputation, precision, GPU, fabric, cluster sizes; ranges around the scenario's own values where it\n"
       "is silent): rejects what is invalid or does not fit (counted, with reasons), estimates the rest, re-ranks\n"
       "the best with the discrete-event simulation, and ranks by days to train with failures (or cost). With\n"
       "--shard I/N it evaluates every N-th layout and writes a partial result for plumb merge. Exit 3 when\n"
       "nothing qualifies, with the nearest misses.",
       {"SCENARIO"},
       [] {
         auto o = output_options();
         o.push_back({"--shard", "I/N", "evaluate shard I of N (0-based) and write it with --out"});
         o.push_back({"--out", "FILE", "where --shard writes its partial result"});
         o.push_back({"--mpi", "", "split the search over MPI ranks (mpirun -np K plumb plan ... --mpi); rank 0 reports"});
         return o;
       }()},
      run_plan_command};
  return command;
}

const Command& merge_command() {
  static const Command command{
      {"merge",
       "plumb merge SCENARIO PART.json... [--json] [--csv F] [--svg F] [--rows N] [--emit megatron|torchtitan] [--threads N]",
       "Combines the partial results of plumb plan --shard I/N (e.g. from a SLURM job array) into one ranking,\n"
       "re-ranks the best with the discrete-event simulation and reports as plumb plan does. The result equals\n"
       "a single plumb plan run of the same scenario.",
       {"SCENARIO", "PART.json..."},
       output_options()},
      run_merge_command};
  return command;
}

}  // namespace plumb::cli
