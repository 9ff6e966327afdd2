#include "cli/report/full_rank_report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <numeric>

namespace plumb {
namespace {

double exposed(const RankStep& s) { return std::accumulate(s.exposed.begin(), s.exposed.end(), 0.0); }

std::string condition_text(const GpuCondition& c) {
  std::vector<std::string> parts;
  if (c.compute != 1.0) parts.push_back(fmt::format("compute ×{:.2f}", c.compute));
  if (c.network != 1.0) parts.push_back(fmt::format("network ×{:.2f}", c.network));
  if (c.fails_at) parts.push_back(fmt::format("fails at {:.3f} s", *c.fails_at));
  return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, ", "));
}

constexpr std::size_t kRows = 8;

}  // namespace

Json full_rank_json(const FullRankSummary& f) {
  Json gpus = Json::array();
  for (const SimulatedGpu& g : f.simulated_gpus)
    gpus.push_back({{"rank", g.rank}, {"pp_rank", g.pp}, {"alike", g.alike}, {"ep_rank", g.ep}, {"compute_s", g.time.compute},
                    {"exposed_comm_s", exposed(g.time)}, {"idle_s", g.time.idle}, {"peak_activation_bytes", g.time.peak_bytes},
                    {"compute_speed", g.condition.compute}, {"network_speed", g.condition.network},
                    {"fails_at_s", g.condition.fails_at ? Json(*g.condition.fails_at) : Json(nullptr)}});
  Json out = {{"gpus", f.gpus}, {"simulated_gpus", f.simulated}, {"refinement_rounds", f.rounds}, {"perturbations", f.perturbations},
              {"unperturbed_step_time_s", f.unperturbed_step_time ? Json(*f.unperturbed_step_time) : Json(nullptr)},
              {"ep_load", f.ep_load}, {"simulated", gpus}, {"failure", nullptr}};
  if (f.fabric.modelled) {
    Json shares = Json::object(), flows = Json::object();
    for (std::size_t k = 0; k < kCommKinds; ++k) {
      const std::string name(comm_kind_name(static_cast<CommKind>(k)));
      shares[name] = f.fabric.slowest[k];
      flows[name] = f.fabric.flows[k];
    }
    out["fabric"] = {{"slowest_share", shares}, {"flows", flows}, {"solve_s", f.fabric.solve_seconds}};
  }
  if (f.failure)
    out["failure"] = {{"what", f.failure->what}, {"fails_at_s", f.failure->fails_at}, {"failed_gpus", f.failure->failed_gpus},
                      {"first_blocked_s", f.failure->first_blocked}, {"first_blocked_at", f.failure->first_blocked_at},
                      {"all_blocked_s", f.failure->all_blocked}, {"blocked_gpus", f.failure->blocked_gpus}};
  return out;
}

std::string full_rank_table(const FullRankSummary& f) {
  std::string out = fmt::format("\nfull rank          {} GPUs simulated as {} (GPUs that run alike share one timeline; {} refinement round(s))\n",
                                f.gpus, f.simulated, f.rounds);
  if (!f.perturbations.empty()) out += fmt::format("perturbations      {}\n", fmt::join(f.perturbations, " · "));
  if (f.unperturbed_step_time) out += fmt::format("                   without them the step takes {:.3f} s\n", *f.unperturbed_step_time);
  if (f.fabric.modelled) {
    std::vector<std::string> parts;
    std::int64_t flows = 0;
    for (std::size_t k = 0; k < kCommKinds; ++k) {
      flows += f.fabric.flows[k];
      if (f.fabric.flows[k] > 0) parts.push_back(fmt::format("{} {:.2f}", comm_kind_name(static_cast<CommKind>(k)), f.fabric.slowest[k]));
    }
    out += fmt::format("fabric switches    the slowest group's share of its NICs' rate, every group of a kind at once: {} "
                       "({} flows, max-min over the fabric's tiers in {:.2f} s)\n",
                       parts.empty() ? std::string("no flow leaves a node") : fmt::format("{}", fmt::join(parts, ", ")), flows,
                       f.fabric.solve_seconds);
  }
  if (!f.ep_load.empty()) {
    std::vector<double> sorted = f.ep_load;
    std::sort(sorted.begin(), sorted.end());
    auto busiest = std::max_element(f.ep_load.begin(), f.ep_load.end()), lightest = std::min_element(f.ep_load.begin(), f.ep_load.end());
    out += fmt::format("MoE load per EP    busiest expert / mean over {} EP ranks: min {:.3f}× (EP {}), median {:.3f}×, max {:.3f}× (EP {})\n",
                       f.ep_load.size(), *lightest, lightest - f.ep_load.begin(), sorted[sorted.size() / 2], *busiest,
                       busiest - f.ep_load.begin());
  }
  if (f.failure) {
    const FailureStall& x = *f.failure;
    out += fmt::format("failure            {} ({} GPUs) fails at {:.3f} s: the step cannot finish. The first other GPU stuck: {:.3f} s, {};\n"
                       "                   {} of {} GPUs stuck by {:.3f} s. A synchronous job hangs there until its collectives time out,\n"
                       "                   then restarts from its last checkpoint (priced under \"with failures\" below).\n",
                       x.what, x.failed_gpus, x.fails_at, x.first_blocked, x.first_blocked_at, x.blocked_gpus, f.gpus, x.all_blocked);
  }
  // The simulated GPUs that differ most from the typical GPU of their pipeline rank (the one standing for
  // the most GPUs there) in time spent working: a slow GPU computing longer, a slow link's peers waiting.
  std::map<std::int64_t, const SimulatedGpu*> typical;
  for (const SimulatedGpu& g : f.simulated_gpus)
    if (!typical.count(g.pp) || typical[g.pp]->alike < g.alike) typical[g.pp] = &g;
  auto busy = [](const SimulatedGpu& g) { return g.time.compute + exposed(g.time); };
  auto off = [&](const SimulatedGpu& g) { return busy(g) - busy(*typical[g.pp]); };
  std::vector<const SimulatedGpu*> rows;
  for (const SimulatedGpu& g : f.simulated_gpus) rows.push_back(&g);
  std::stable_sort(rows.begin(), rows.end(), [&](const SimulatedGpu* a, const SimulatedGpu* b) { return std::abs(off(*a)) > std::abs(off(*b)); });
  out += fmt::format("\nsimulated GPUs that differ most from their pipeline rank's typical GPU ({} of {}; alike: the job's GPUs each stands for)\n",
                     std::min(kRows, rows.size()), rows.size());
  out += fmt::format("{:>8} {:>4} {:>7} {:>5} {:>10} {:>10} {:>9} {:>11}  {}\n", "GPU", "pp", "alike", "EP", "compute s", "exposed s",
                     "idle s", "vs typical", "condition");
  for (std::size_t i = 0; i < rows.size() && i < kRows; ++i) {
    const SimulatedGpu& g = *rows[i];
    out += fmt::format("{:>8} {:>4} {:>7} {:>5} {:>10.3f} {:>10.3f} {:>9.3f} {:>+9.1f}ms  {}\n", g.rank, g.pp, g.alike, g.ep, g.time.compute,
                       exposed(g.time), g.time.idle, 1e3 * off(g), condition_text(g.condition));
  }
  return out;
}

}  // namespace plumb
