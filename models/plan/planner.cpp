#include "models/plan/planner.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fmt/format.h>
#include <mutex>
#include <thread>

#include "models/memory/memory.hpp"
#include "models/step/step_builder.hpp"
#include "models/step/step_estimate.hpp"
#include "models/step/step_summary.hpp"

namespace plumb {

// Points evaluated between two progress reports.
constexpr std::uint64_t kProgressEvery = 4096;
namespace {

constexpr std::size_t kNearMisses = 5;

// A layout rule's message names its field first ("/parallel/vp: …").
RejectionReason layout_rule(const std::string& why) {
  return {RejectionKind::invalid_layout, why.substr(0, why.find(':'))};
}

void reject(PlanOutcome& o, const RejectionReason& reason, const std::string& example, std::uint64_t index) {
  Rejection& r = o.rejected[reason];
  if (r.count == 0 || index < r.example_index) {
    r.example = example;
    r.example_index = index;
  }
  ++r.count;
}

void fill_timing(PlanResult& r, const Job& job, double step_time) {
  r.step_time = step_time;
  StepRates rates = rates_at(job, step_time);
  r.tokens_per_s_per_gpu = rates.tokens_per_s_per_gpu;
  r.mfu = rates.mfu;
  TrainingTotals t = training_totals(job, step_time);
  r.days = t.days;
  r.days_with_failures = t.days_with_failures;
  r.gpu_hours = t.gpu_hours_with_failures;
  r.cost_usd = t.cost_usd_with_failures;
  r.goodput = t.resilience.goodput;
}

PlanResult describe(const Job& job, std::uint64_t index, double peak, double capacity) {
  PlanResult r;
  r.index = index;
  r.layout = describe_layout(job.layout);
  r.moe_waves = job.layout.moe_execution == MoeExecution::waves;
  r.gpu = job.cluster.gpu.id.empty() ? job.cluster.gpu.name : job.cluster.gpu.id;
  r.fabric = job.cluster.fabric.id.empty() ? job.cluster.fabric.name : job.cluster.fabric.id;
  r.precision = std::string(precision_name(job.training.precision));
  r.gpus = job.layout.gpus();
  r.peak_bytes = peak;
  r.capacity_bytes = capacity;
  return r;
}

void keep_near_misses(std::vector<PlanResult>& misses, PlanResult r) {
  misses.push_back(std::move(r));
  std::sort(misses.begin(), misses.end(), [](const PlanResult& a, const PlanResult& b) {
    double x = a.peak_bytes / a.capacity_bytes, y = b.peak_bytes / b.capacity_bytes;
    return x != y ? x < y : a.index < b.index;
  });
  if (misses.size() > kNearMisses) misses.resize(kNearMisses);
}

// Evaluates one point into `o`.
void evaluate(const Job& base, const PlanSpace& space, std::uint64_t index, PlanOutcome& o) {
  ++o.evaluated;
  std::string why;
  std::optional<Job> job = job_at(base, space, point_at(space, index), &why);
  if (!job) return reject(o, layout_rule(why), why, index);
  MemoryPlan memory = plan_memory(*job);
  const RankMemory& peak = memory.ranks[memory.peak_rank];
  PlanResult r = describe(*job, index, peak.total_bytes(), memory.capacity_bytes);
  if (!memory.fits()) {
    reject(o, {RejectionKind::does_not_fit, {}}, fmt::format("{} needs {:.1f} GiB on pipeline rank {} of {:.1f} GiB", r.layout, r.peak_bytes / 1073741824.0,
                                    memory.peak_rank, r.capacity_bytes / 1073741824.0),
           index);
    return keep_near_misses(o.near_misses, std::move(r));
  }
  StepCosts costs;
  try {
    costs = step_costs(*job);
  } catch (const std::invalid_argument& e) {
    return reject(o, {RejectionKind::unpriceable, {}}, fmt::format("{}: {}", r.layout, e.what()), index);
  }
  r.estimate = estimate_step(job->layout, job->microbatches(), costs).step_time;
  fill_timing(r, *job, r.estimate);
  if (space.max_days > 0 && r.days_with_failures > space.max_days)
    return reject(o, {RejectionKind::too_slow, {}}, fmt::format("{} takes {:.1f} days", r.layout, r.days_with_failures), index);
  ++o.feasible;
  o.ranked.push_back(std::move(r));
}

void absorb(PlanOutcome& into, PlanOutcome&& part) {
  into.evaluated += part.evaluated;
  into.feasible += part.feasible;
  for (auto& [key, r] : part.rejected) {
    Rejection& t = into.rejected[key];
    if (t.count == 0 || r.example_index < t.example_index) {
      t.example = r.example;
      t.example_index = r.example_index;
    }
    t.count += r.count;
  }
  for (PlanResult& r : part.ranked) into.ranked.push_back(std::move(r));
  for (PlanResult& r : part.near_misses) keep_near_misses(into.near_misses, std::move(r));
}

int thread_count(int asked) {
  if (asked > 0) return asked;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Runs `work(i)` for i in [0, n) on `threads` threads, chunk by chunk.
template <class Work>
void parallel_for(std::uint64_t n, int threads, Work&& work) {
  std::atomic<std::uint64_t> next{0};
  // Chunks small enough that every thread gets work (a hundred simulations are a hundred chunks).
  const std::uint64_t chunk = std::clamp<std::uint64_t>(n / (static_cast<std::uint64_t>(threads) * 16), 1, 256);
  auto run = [&](int t) {
    for (std::uint64_t start; (start = next.fetch_add(chunk)) < n;)
      for (std::uint64_t i = start; i < std::min(n, start + chunk); ++i) work(t, i);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(run, t);
  run(0);
  for (std::thread& th : pool) th.join();
}

void simulate(const Job& base, const PlanSpace& space, PlanOutcome& o, const std::vector<std::size_t>& which, int threads);

// Simulates the best `top` by the estimate; rank_results then puts them first, in simulated order.
void simulate_best(const Job& base, const PlanSpace& space, PlanOutcome& o, int threads) {
  std::vector<std::size_t> best;
  for (std::size_t i = 0; i < std::min<std::size_t>(o.ranked.size(), static_cast<std::size_t>(space.top)); ++i) best.push_back(i);
  simulate(base, space, o, best, threads);
  rank_results(o, space);
}

void simulate(const Job& base, const PlanSpace& space, PlanOutcome& o, const std::vector<std::size_t>& which, int threads) {
  parallel_for(which.size(), threads, [&](int, std::uint64_t k) {
    PlanResult& r = o.ranked[which[k]];
    std::string why;
    std::optional<Job> job = job_at(base, space, point_at(space, r.index), &why);
    StepCosts costs = step_costs(*job);
    StepSimulation sim = simulate_step(*job, costs);
    fill_timing(r, *job, sim.step_time);
    r.simulated = true;
    double ranks = static_cast<double>(sim.ranks.size());
    for (const RankStep& rank : sim.ranks) {
      r.compute += rank.compute / ranks;
      r.idle += rank.idle / ranks;
      for (std::size_t j = 0; j < kCommKinds; ++j) r.exposed[j] += rank.exposed[j] / ranks;
    }
  });
}

}  // namespace

std::string_view RejectionReason::key() const {
  switch (kind) {
    case RejectionKind::invalid_layout: return field;
    case RejectionKind::does_not_fit: return "memory";
    case RejectionKind::unpriceable: return "costs";
    case RejectionKind::too_slow: return "max_days";
  }
  return field;
}

RejectionReason RejectionReason::from_key(const std::string& key) {
  for (RejectionKind k : {RejectionKind::does_not_fit, RejectionKind::unpriceable, RejectionKind::too_slow})
    if (RejectionReason{k, {}}.key() == key) return {k, {}};
  return {RejectionKind::invalid_layout, key};
}

std::uint64_t PlanOutcome::rejected_total() const {
  std::uint64_t n = 0;
  for (const auto& [_, r] : rejected) n += r.count;
  return n;
}

void rank_results(PlanOutcome& o, const PlanSpace& space) {
  // Every layout of a plan trains the same tokens per step, so time to train goes as the step time
  // over the goodput, and cost as that times the GPUs: keys that rank right even when the scenario
  // gives no token budget (and days are zero).
  auto time = [](const PlanResult& r) { return r.step_time / std::max(r.goodput, 1e-12); };
  auto cost = [&](const PlanResult& r) { return time(r) * static_cast<double>(r.gpus); };
  auto objective = [&](const PlanResult& r) { return space.cheapest ? cost(r) : time(r); };
  // The simulated layouts (the best `top` by the estimate) head the ranking in their simulated order;
  // the rest follow by their estimates.
  std::sort(o.ranked.begin(), o.ranked.end(), [&](const PlanResult& a, const PlanResult& b) {
    if (a.simulated != b.simulated) return a.simulated;
    if (objective(a) != objective(b)) return objective(a) < objective(b);
    if (a.gpus != b.gpus) return a.gpus < b.gpus;
    if (cost(a) != cost(b)) return cost(a) < cost(b);
    return a.index < b.index;
  });
  // Pareto: walking from the fastest, a layout joins the frontier when no faster one is also at most
  // as large and as cheap.
  o.pareto.clear();
  std::vector<std::size_t> order(o.ranked.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const PlanResult &x = o.ranked[a], &y = o.ranked[b];
    return time(x) != time(y) ? time(x) < time(y) : a < b;
  });
  std::vector<std::size_t> front;
  for (std::size_t i : order) {
    const PlanResult& r = o.ranked[i];
    bool beaten = std::any_of(front.begin(), front.end(), [&](std::size_t j) {
      const PlanResult& f = o.ranked[j];
      return f.gpus <= r.gpus && cost(f) <= cost(r);
    });
    if (!beaten) front.push_back(i);
  }
  std::sort(front.begin(), front.end());
  o.pareto = front;
}

PlanOutcome run_plan(const Job& scenario, const PlanSpace& space, const PlanOptions& options) {
  auto start = std::chrono::steady_clock::now();
  Job base = scenario;
  base.plan = Json();  // read already: every point's job copies the base, so leave the section behind
  const int threads = thread_count(options.threads);
  const std::uint64_t total = space.size();
  std::vector<std::uint64_t> mine;  // this shard's points
  for (std::uint64_t i = options.shard; i < total; i += options.shards) mine.push_back(i);
  std::vector<PlanOutcome> parts(static_cast<std::size_t>(threads));
  std::atomic<std::uint64_t> done{0};
  std::mutex report;
  parallel_for(mine.size(), threads, [&](int t, std::uint64_t k) {
    evaluate(base, space, mine[k], parts[static_cast<std::size_t>(t)]);
    std::uint64_t d = ++done;
    if (options.progress && (d % kProgressEvery == 0 || d == mine.size())) {
      std::lock_guard<std::mutex> lock(report);
      options.progress(d, mine.size());
    }
  });
  PlanOutcome out;
  for (PlanOutcome& p : parts) absorb(out, std::move(p));
  rank_results(out, space);
  if (options.simulate) simulate_best(base, space, out, threads);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

PlanOutcome merge_plans(const Job& scenario, const PlanSpace& space, std::vector<PlanOutcome> parts, const PlanOptions& options) {
  auto start = std::chrono::steady_clock::now();
  Job base = scenario;
  base.plan = Json();  // as run_plan: the points' jobs need no copy of it
  PlanOutcome out;
  double seconds = 0;
  for (PlanOutcome& p : parts) {
    seconds += p.seconds;
    absorb(out, std::move(p));
  }
  rank_results(out, space);
  if (options.simulate) simulate_best(base, space, out, thread_count(options.threads));
  out.seconds = seconds + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace plumb
