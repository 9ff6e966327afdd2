#include <fmt/format.h>
#include <fmt/ranges.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "cli/commands.hpp"
#include "cli/report/schedule_report.hpp"
#include "models/input/json_reader.hpp"
#include "models/schedules/registry.hpp"
#include "models/schedules/zero_bubble.hpp"
#include "sim/outputs.hpp"
#include "validate/run/pipeline_numerics.hpp"

namespace plumb::cli {

std::string read_text(const std::string& path) {
  Diagnostics d;
  SourceFile src{path, std::filesystem::path(path).parent_path(), &d, {}};
  std::optional<std::string> text = read_input_text(path, src);
  d.throw_if_any();
  return text.value_or("");
}

void write_file(const std::string& path, const std::string& text) {
  // Written beside it and renamed over it, so an interrupted run never leaves half a file under the name.
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary);
    if (!(out << text) || !(out.flush())) {
      std::error_code ignored;
      std::filesystem::remove(partial, ignored);
      throw UsageError(fmt::format("cannot write {}", path));
    }
  }
  std::error_code moved;
  std::filesystem::rename(partial, path, moved);
  if (moved) {
    std::filesystem::remove(partial, moved);
    throw UsageError(fmt::format("cannot write {}", path));
  }
}

namespace {

// The largest op cost --f/--b/--fb/--p2p/--grad-sync accept (any unit; the engine runs one as a microsecond).
constexpr double kMaxOpCost = 1e12;

int run_schedule_command(const Args& args) {
  OpCosts costs;
  costs.f = args.number("--f", 1, 0, kMaxOpCost);
  costs.b = args.number("--b", 2, 0, kMaxOpCost);
  costs.w = args.number("--w", 1, 0, costs.b);
  costs.fb = args.number("--fb", costs.f + costs.b, 0, kMaxOpCost);
  costs.p2p = args.number("--p2p", 0, 0, kMaxOpCost);
  costs.grad_sync = args.number("--grad-sync", 0, 0, kMaxOpCost);
  std::int64_t pp = args.integer("--pp", 0, 1, 4096);
  std::int64_t m = args.integer("--microbatches", 0, 1, 1'000'000);
  if (pp == 0 || m == 0) throw UsageError("--pp and --microbatches are required");
  std::int64_t vp = args.integer("--vp", 0, 1, 64);
  if (args.flag("--compare")) {
    auto rows = compare_schedules(pp, m, vp == 0 ? 2 : vp, costs);
    if (args.flag("--json")) {
      Json out = Json::array();
      for (const ScheduleComparison& c : rows)
        out.push_back(c.unavailable.empty()
                          ? Json{{"schedule", c.name}, {"makespan", c.makespan}, {"bubble", c.bubble},
                                 {"bubble_fraction", c.bubble_fraction}, {"span_bubble", c.span_bubble},
                                 {"peak_activations", c.peak_activations}, {"params_per_device", c.params}}
                          : Json{{"schedule", c.name}, {"unavailable", c.unavailable}});
      std::cout << out.dump(2) << "\n";
    } else {
      std::cout << comparison_table(rows, pp, m);
    }
    return kOk;
  }
  std::string name = args.value("--schedule", "1f1b");
  PipelineSchedule s;
  if (name == "zb-auto") {
    const std::int64_t limit = args.integer("--memory-limit", pp, 1, 1'000'000);
    s = automatic_zero_bubble(ScheduleKind::zb_h1, pp, m, {costs.times(), std::vector<std::int64_t>(static_cast<std::size_t>(pp), limit)});
  } else {
    ScheduleKind kind = choose("--schedule", name, schedule_names());
    const std::int64_t v = vp == 0 ? (schedule_family(kind).interleaves ? 2 : 1) : vp;
    OpTimes times = costs.times();  // the zero-bubble families order their ops for these
    times.stash = args.number("--stash", 0, 0, 100);
    s = schedule_for(kind, {.ranks = pp, .microbatches = m, .vp = v}, times);
  }
  ScheduleRun run = run_schedule(s, costs);
  std::optional<NumericCheck> verified;
  if (args.flag("--verify")) verified = check_schedule_numerics(s);
  if (args.flag("--svg")) write_file(args.value("--svg"), schedule_svg(s, run));
  if (args.flag("--trace")) write_file(args.value("--trace"), sim::chrome_trace(run.graph, run.machine, run.result));
  if (args.flag("--json")) {
    Json out = schedule_json(s, run);
    if (verified)
      out["verify"] = {{"loss_pipelined", verified->loss_pipelined},
                       {"loss_serial", verified->loss_serial},
                       {"max_gradient_difference", verified->max_gradient_difference},
                       {"matches", verified->matches()}};
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << schedule_grid(s, run);
    if (verified)
      std::cout << fmt::format("\nverify: {} ops over {} stages × {} micro-batches {} a serial run: loss {:.12g} (serial {:.12g}), "
                               "largest gradient difference {:.1e} of the largest gradient\n",
                               verified->ops, verified->stages, verified->microbatches, verified->matches() ? "match" : "DO NOT match",
                               verified->loss_pipelined, verified->loss_serial, verified->max_gradient_difference);
  }
  return verified && !verified->matches() ? kInternal : kOk;
}

}  // namespace

const Command& schedule_command() {
  static const Command command{
      {"schedule",
       "plumb schedule --schedule NAME --pp N --microbatches M [--vp V] [--f 1 --b 2 --w 1 --fb 3] [--p2p 0]\n"
       "                      [--verify] [--trace t.json] [--svg s.svg] [--json]\n"
       "       plumb schedule --compare --pp N --microbatches M [costs] [--json]",
       "Generates a pipeline schedule, checks it and runs it on the simulator with per-op costs: prints\n"
       "the rank × time grid, each rank's bubble and its peak in-flight activations.\n"
       "Schedules: gpipe, 1f1b, interleaved, zb-h1, zb-h2, zb-v, zb-1p and zb-2p (the zero-bubble paper's\n"
       "automatic schedules under p and 2p activation sets on every rank), dualpipe, dualpipev, and zb-auto\n"
       "(that heuristic for the given costs and --memory-limit). zb-h1 and zb-h2 are the paper's hand-made\n"
       "orders; zb-v, zb-1p and zb-2p order their ops for the costs given, as the paper's runtime does, and\n"
       "--stash counts each weight gradient they defer against their memory limit.\n"
       "Costs are in any unit: F forward, B full backward (the zero-bubble split runs B−W then W),\n"
       "F&B one overlapped forward+backward pair (DualPipe). --verify runs a small float64 model (a SwiGLU\n"
       "block per stage) through the schedule's ops in the order the GPU executor queues them and checks the\n"
       "loss and every weight gradient against a serial run.",
       {},
       {{"--schedule", "NAME", "the schedule (default 1f1b)"},
        {"--pp", "N", "pipeline ranks"},
        {"--microbatches", "M", "micro-batches per step"},
        {"--vp", "V", "virtual stages per rank (interleaved; default 2)"},
        {"--f", "T", "forward cost (default 1)"},
        {"--b", "T", "full backward cost (default 2)"},
        {"--w", "T", "weight-gradient part of the backward (default 1)"},
        {"--fb", "T", "overlapped forward+backward pair (default F+B)"},
        {"--p2p", "T", "time to hand a micro-batch to the next rank (default 0)"},
        {"--grad-sync", "T", "DualPipe: summing a stage's gradients across its two mirror ranks (default 0)"},
        {"--memory-limit", "N", "zb-auto: activation sets a rank may hold (default pp)"},
        {"--stash", "S", "zero-bubble schedules: what a deferred weight gradient keeps, as a share of an activation set (Qi et al.: 32h/(34h + 5as) for a GPT layer; default 0, not counted)"},
        {"--trace", "FILE", "write a Chrome trace (open it in Perfetto)"},
        {"--svg", "FILE", "write the schedule as a colour SVG"},
        {"--json", "", "print JSON instead of the grid"},
        {"--compare", "", "run every schedule on the same ranks and model and print them side by side"},
        {"--verify", "", "run a small float64 model through the schedule and check it gives the serial loss and gradients"}}},
      run_schedule_command};
  return command;
}

}  // namespace plumb::cli
