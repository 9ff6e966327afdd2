#include "models/step/step_builder.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <stdexcept>

#include "models/memory/memory.hpp"
#include "models/step/step_estimate.hpp"
#include "models/schedule_run/pipeline_run.hpp"
#include "models/parallel/placement.hpp"
#include "models/step/full_rank.hpp"

namespace plumb {
namespace {


struct RankStreams {
  sim::StreamId compute, comm, p2p, dp;
};

// A communication task of a collective and the task it waits for on its own GPU: in full mode a
// barrier joins the group's members between the two.
struct Site {
  sim::TaskId before, comm;
};

// What all replicas share: the streams of every machine GPU and the collective sites on each.
struct StepShared {
  std::vector<RankStreams> streams;                          // per machine GPU
  std::vector<std::array<std::vector<Site>, kCommKinds>> sites;  // per machine GPU, per kind, in order
  std::vector<double> activation_bytes;                      // per model stage
  std::vector<double> weight_stash_bytes;                    // per model stage: of those, what its W reads
  // Per machine GPU: what its compute and each kind of its communication take relative to the costs
  // (full mode: a slow GPU, a degraded link; 1 otherwise).
  std::vector<double> compute_scale;
  std::vector<std::array<double, kCommKinds>> comm_scale;
};

// One replica of the pipeline (one GPU per pipeline rank) built into the step's graph. `gpus` maps
// each pipeline rank to its machine GPU; ops and sends name pipeline ranks.
class StepOps final : public PipelineHooks {
 public:
  StepOps(const Job& job, const StepCosts& costs, StepSimulation& out, StepShared& shared, std::vector<std::int32_t> gpus,
          bool record_ops)
      : job_(job), costs_(costs), out_(out), shared_(shared), gpus_(std::move(gpus)), record_ops_(record_ops) {}

  // ZeRO-1/2 (and ZeRO-3 that keeps its weights gathered through the step) gathers the previous
  // optimizer step's parameters as the step starts; a stage's first forward waits for its first
  // layer's bucket, the rest arrives while it computes. Per-pass ZeRO-3 gathers have no such term.
  void add_param_gathers(const PipelineSchedule& s) {
    if (job_.layout.zero < 1) return;
    for (std::int64_t r = 0; r < s.ranks; ++r)
      for (std::int64_t st : stages_of_rank(s.kind, r, job_.layout.pp, job_.layout.vp)) {
        double total = costs_.stages[static_cast<std::size_t>(st)].param_gather;
        if (total <= 0) continue;
        double layers = static_cast<double>(std::max<std::int64_t>(1, job_.layout.stage_layers[static_cast<std::size_t>(st)]));
        sim::TaskId first = comm_task(r, streams(r).dp, fmt::format("param gather s{} (first bucket)", st), total / layers, CommKind::dp);
        if (layers > 1) comm_task(r, streams(r).dp, fmt::format("param gather s{}", st), total - total / layers, CommKind::dp);
        first_gather[{r, st}] = first;
      }
  }

  OpTasks add_op(std::int64_t rank, const PipeOp& o) override {
    const auto first = static_cast<sim::TaskId>(out_.graph.size());
    OpTasks t = expand(rank, o);
    if (record_ops_) {
      out_.op_tasks.resize(static_cast<std::size_t>(job_.layout.pp));
      out_.op_tasks[static_cast<std::size_t>(rank)].emplace_back(first, static_cast<sim::TaskId>(out_.graph.size()));
    }
    return t;
  }

  OpTasks expand(std::int64_t rank, const PipeOp& o) {
    const StageCost& c = costs_.stages[static_cast<std::size_t>(o.work.stage)];
    OpTasks t;
    PassEnds forward, backward;  // the op's forward and backward parts, where it has them
    switch (o.kind) {
      case OpKind::forward: {
        forward = chain(rank, {{&c.forward, fmt::format("F{}", o.work.mb)}}, o.work.stage)[0];
        t = {forward.in, forward.out, forward.in, forward.out};
        break;
      }
      case OpKind::backward:
      case OpKind::backward_input:
      case OpKind::weight: {
        const Pass& p = o.kind == OpKind::backward ? c.backward : o.kind == OpKind::weight ? c.weight_grad : c.input_grad;
        backward = chain(rank, {{&p, fmt::format("{}{}", op_kind_symbol(o.kind), o.work.mb)}}, -1)[0];
        t = {backward.in, backward.out, backward.in, backward.out};
        break;
      }
      case OpKind::forward_backward: {
        const StageCost& b = costs_.stages[static_cast<std::size_t>(o.other.stage)];
        auto ends = chain(rank, {{&c.forward, fmt::format("F{}", o.work.mb)}, {&b.backward, fmt::format("B{}", o.other.mb)}},
                          o.work.stage);
        forward = ends[0];
        backward = ends[1];
        t = {forward.in, forward.out, backward.in, backward.out};
        break;
      }
    }
    // Activations live from the end of a forward to the end of the matching backward: on the pass's
    // last task that worked (its end marker, after ZeRO's background traffic or a CP join, belongs to no
    // GPU). An input-gradient backward leaves what its W reads (its GEMMs' inputs and output gradients)
    // until that W.
    auto at = [](const PassEnds& e) { return e.worked != sim::kNoTask ? e.worked : e.out; };
    auto bytes = [](const std::vector<double>& v, std::int32_t stage) { return static_cast<std::int64_t>(v[static_cast<std::size_t>(stage)]); };
    const StageWork& w = o.kind == OpKind::forward_backward ? o.other : o.work;
    switch (o.kind) {
      case OpKind::forward:
        out_.graph.set_memory_delta(at(forward), bytes(shared_.activation_bytes, o.work.stage));
        break;
      case OpKind::forward_backward:
        out_.graph.set_memory_delta(at(forward), bytes(shared_.activation_bytes, o.work.stage));
        out_.graph.set_memory_delta(at(backward), -bytes(shared_.activation_bytes, w.stage));
        break;
      case OpKind::backward:
        out_.graph.set_memory_delta(at(backward), -bytes(shared_.activation_bytes, w.stage));
        break;
      case OpKind::backward_input:
        out_.graph.set_memory_delta(at(backward), bytes(shared_.weight_stash_bytes, w.stage) - bytes(shared_.activation_bytes, w.stage));
        break;
      case OpKind::weight:
        out_.graph.set_memory_delta(at(backward), -bytes(shared_.weight_stash_bytes, w.stage));
        break;
    }
    return t;
  }

  std::optional<std::pair<sim::TaskId, sim::TaskId>> add_send(std::int64_t from, std::int64_t, StageWork w, bool forward) override {
    const StageCost& c = costs_.stages[static_cast<std::size_t>(w.stage)];
    if (c.p2p <= 0 || c.p2p_in_passes) return std::nullopt;  // blocking sends sit inside the ops
    sim::TaskId t = comm_task(from, streams(from).p2p, fmt::format("send {}{} s{}", forward ? "F" : "B", w.mb, w.stage), c.p2p,
                              CommKind::pp);
    return std::pair{t, t};
  }

  // A communication task: NCCL's kernels holding comm_sms SMs while they run, or copies on the copy
  // engines (`copy_engine`), which leave the SMs to compute.
  sim::TaskId comm_task(std::int64_t rank, sim::StreamId stream, const std::string& label, double seconds, CommKind kind,
                        bool copy_engine = false) {
    seconds *= shared_.comm_scale[static_cast<std::size_t>(gpu(rank))][static_cast<std::size_t>(kind)];
    sim::TaskId t = out_.graph.add_compute(label, stream, sim::nearest_time(seconds), copy_engine ? 0 : costs_.comm_sms);
    if (copy_engine) out_.graph.set_off_sms(t);
    if (costs_.network[static_cast<std::size_t>(kind)] && seconds > 0) out_.graph.set_shares_port(t);
    note(rank, static_cast<std::int8_t>(kind));
    return t;
  }
  sim::TaskId compute_task(std::int64_t rank, const std::string& label, double seconds) {
    seconds *= shared_.compute_scale[static_cast<std::size_t>(gpu(rank))];
    sim::TaskId t = out_.graph.add_compute(label, streams(rank).compute, sim::nearest_time(seconds));
    note(rank, -1);
    return t;
  }
  sim::TaskId marker(std::int64_t rank, const std::string& label) {
    sim::TaskId t = out_.graph.add_marker(label);
    note(rank, -1);
    return t;
  }

  // A collective's task on pipeline rank `rank`, after `before` on the same GPU.
  void site(std::int64_t rank, CommKind kind, sim::TaskId before, sim::TaskId comm) {
    shared_.sites[static_cast<std::size_t>(gpu(rank))][static_cast<std::size_t>(kind)].push_back({before, comm});
  }
  const RankStreams& streams(std::int64_t rank) const { return shared_.streams[static_cast<std::size_t>(gpu(rank))]; }
  std::int32_t gpu(std::int64_t rank) const { return gpus_[static_cast<std::size_t>(rank)]; }

  std::map<std::pair<std::int64_t, std::int64_t>, sim::TaskId> first_gather;  // (rank, stage) → its first bucket

 private:
  // Per task, in creation order: which GPU it runs on and what kind of communication it is.
  void note(std::int64_t rank, std::int8_t kind) {
    out_.task_comm.push_back(kind);
    out_.task_gpu.push_back(gpu(rank));
  }

  // Expands one or two passes (two: DualPipe's F&B) into tasks. Segments are created in the order
  // (position, pass) on the rank's one compute and one communication stream: each pass's
  // communication hides under the other's compute, and the order can never deadlock. Returns each
  // pass's (entry, exit). `gather_stage` ≥ 0: the first forward of that stage on this rank waits for
  // its parameter gather.
  // A pass's tasks: its entry and exit markers' ends, and the last task that did work (compute or
  // communication) — the one memory changes attach to, since markers belong to no GPU.
  struct PassEnds {
    sim::TaskId in = sim::kNoTask, out = sim::kNoTask, worked = sim::kNoTask;
  };

  std::vector<PassEnds> chain(std::int64_t rank, const std::vector<std::pair<const Pass*, std::string>>& passes, std::int64_t gather_stage) {
    const RankStreams& st = streams(rank);
    std::vector<sim::TaskId> entry, last, worked;
    std::vector<PassEnds> ends;
    for (const auto& [pass, label] : passes) {
      sim::TaskId in = marker(rank, label + " start");
      entry.push_back(in);
      last.push_back(in);
      worked.push_back(sim::kNoTask);
    }
    if (gather_stage >= 0) {
      auto g = first_gather.find({rank, gather_stage});
      if (g != first_gather.end()) {
        out_.graph.add_dependency(g->second, entry[0]);
        first_gather.erase(g);  // only the stage's first forward waits
      }
    }
    std::vector<sim::TaskId> background(passes.size(), sim::kNoTask);
    for (std::size_t p = 0; p < passes.size(); ++p)
      if (passes[p].first->background > 0) {
        background[p] = comm_task(rank, st.dp, passes[p].second + " ZeRO shard gather/scatter", passes[p].first->background, CommKind::dp);
        out_.graph.add_dependency(entry[p], background[p]);
        site(rank, CommKind::dp, entry[p], background[p]);
      }
    std::size_t n = 0;
    for (const auto& pp : passes) n = std::max(n, pp.first->segments.size());
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t p = 0; p < passes.size(); ++p) {
        const auto& segs = passes[p].first->segments;
        if (i >= segs.size()) continue;
        const Segment& g = segs[i];
        sim::TaskId before = last[p];
        sim::TaskId compute = sim::kNoTask, comm = sim::kNoTask;
        if (g.compute > 0) {
          compute = compute_task(rank, passes[p].second, g.compute);
          out_.graph.add_dependency(before, compute);
        }
        if (g.comm > 0) {
          comm = comm_task(rank, st.comm, fmt::format("{} {}", comm_kind_name(g.kind), passes[p].second), g.comm, g.kind,
                           g.copy_engine);
          sim::TaskId waits = g.overlapped || compute == sim::kNoTask ? before : compute;
          out_.graph.add_dependency(waits, comm);
          site(rank, g.kind, waits, comm);
        }
        if (comm != sim::kNoTask) worked[p] = comm;
        else if (compute != sim::kNoTask) worked[p] = compute;
        if (g.overlapped && compute != sim::kNoTask && comm != sim::kNoTask) {
          sim::TaskId join = marker(rank, passes[p].second);
          out_.graph.add_dependency(compute, join);
          out_.graph.add_dependency(comm, join);
          last[p] = join;
        } else {
          last[p] = comm != sim::kNoTask ? comm : compute != sim::kNoTask ? compute : before;
        }
      }
    for (std::size_t p = 0; p < passes.size(); ++p) {
      sim::TaskId out = last[p];
      if (background[p] != sim::kNoTask) {
        out = marker(rank, passes[p].second + " end");
        out_.graph.add_dependency(last[p], out);
        out_.graph.add_dependency(background[p], out);
      }
      ends.push_back({entry[p], out, worked[p]});
    }
    return ends;
  }

  const Job& job_;
  const StepCosts& costs_;
  StepSimulation& out_;
  StepShared& shared_;
  std::vector<std::int32_t> gpus_;
  bool record_ops_;
};

// After the pipeline of one replica: per pipeline rank, the gradient reduction of each stage it
// holds, issued in the order the rank finishes the stages' weight gradients; then the optimizer.
// Each reduction is a data-parallel site keyed by its stage (DualPipe's mirror ranks hold the same
// stage, so pairing by stage keeps their barriers right).
void add_tail(const Job& job, const StepCosts& costs, const PipelineSchedule& s, const PipelineTasks& tasks, StepOps& ops,
              StepSimulation& out, std::map<std::pair<std::int32_t, std::int32_t>, std::vector<Site>>& dp_sites) {
  const ParallelLayout& p = job.layout;
  for (std::int64_t r = 0; r < s.ranks; ++r) {
    std::vector<std::pair<std::size_t, std::int32_t>> finish;  // (index of the rank's last W op of the stage, stage)
    const auto& list = s.ops[static_cast<std::size_t>(r)];
    for (std::int64_t st : stages_of_rank(s.kind, r, p.pp, p.vp)) {
      std::size_t last = 0;
      for (std::size_t i = 0; i < list.size(); ++i) {
        const PipeOp& o = list[i];
        bool weights = (o.kind == OpKind::backward || o.kind == OpKind::weight) ? o.work.stage == st
                       : o.kind == OpKind::forward_backward                      ? o.other.stage == st
                                                                                 : false;
        if (weights) last = i;
      }
      finish.emplace_back(last, static_cast<std::int32_t>(st));
    }
    std::sort(finish.begin(), finish.end());
    double optimizer_seconds = 0;
    std::vector<sim::TaskId> syncs;
    for (const auto& [index, st] : finish) {
      const StageCost& c = costs.stages[static_cast<std::size_t>(st)];
      optimizer_seconds += c.optimizer;
      if (c.grad_sync <= 0) continue;
      // A stage's gradients are complete when every micro-batch's W is (on both mirror ranks for DualPipe).
      sim::TaskId ready = ops.marker(r, fmt::format("gradients of s{} ready", st));
      for (std::int32_t mb = 0; mb < s.microbatches; ++mb) out.graph.add_dependency(tasks.weight_grad(stage_work(mb, st)), ready);
      if (!p.overlap_grad_reduce)  // not before the rank's whole backward is done
        for (const auto& [other_index, other] : finish)
          for (std::int32_t mb = 0; mb < s.microbatches; ++mb)
            if (s.rank_of(stage_work(mb, other)) == r) out.graph.add_dependency(tasks.weight_grad(stage_work(mb, other)), ready);
      sim::TaskId sync = ops.comm_task(r, ops.streams(r).dp, fmt::format("grad reduce s{}", st), c.grad_sync, CommKind::dp);
      out.graph.add_dependency(ready, sync);
      dp_sites[{ops.gpu(r), st}].push_back({ready, sync});
      syncs.push_back(sync);
    }
    sim::TaskId optimizer = ops.compute_task(r, "optimizer", optimizer_seconds);
    for (sim::TaskId sync : syncs) out.graph.add_dependency(sync, optimizer);
    for (const auto& [index, st] : finish)
      for (std::int32_t mb = 0; mb < s.microbatches; ++mb)
        if (s.rank_of(stage_work(mb, st)) == r) out.graph.add_dependency(tasks.weight_grad(stage_work(mb, st)), optimizer);
  }
}

// A barrier across one group's members for each of its collectives, so that none starts before all
// have reached it: members align by the order of their sites. `sites` holds each member's sites.
void join_group(const std::vector<const std::vector<Site>*>& sites, std::string_view kind, std::int32_t gpu, StepSimulation& out) {
  const std::size_t n = sites.front()->size();
  for (const std::vector<Site>* mine : sites)
    if (mine->size() != n) throw std::logic_error(fmt::format("full step: the members of a {} group disagree on their collectives", kind));
  for (std::size_t j = 0; j < n; ++j) {
    sim::TaskId barrier = out.graph.add_marker(fmt::format("{} barrier", kind));
    out.task_comm.push_back(-1);
    out.task_gpu.push_back(gpu);
    for (const std::vector<Site>* mine : sites) {
      const Site& site = (*mine)[j];
      out.graph.add_dependency(site.before, barrier);
      out.graph.add_dependency(barrier, site.comm);
    }
  }
}

// Full mode: a barrier for every TP, CP, EP and DP collective over its group, and for each stage's
// gradient reduction over every GPU holding it, as the classes see them (`machine_gpu`: per class, per
// pipeline rank).
void join_full_groups(const FullRankLayout& layout, const std::vector<std::vector<std::int32_t>>& machine_gpu,
                      std::map<std::pair<std::int32_t, std::int32_t>, std::vector<Site>>& dp_sites, StepShared& shared,
                      StepSimulation& out) {
  for (const sim::ItemGroup& group : layout.barriers) {
    std::vector<const std::vector<Site>*> sites;
    std::vector<std::int32_t> gpus;
    for (const sim::GroupMember& m : group.members)
      gpus.push_back(machine_gpu[static_cast<std::size_t>(m.item)][static_cast<std::size_t>(m.slot)]);
    const bool reduction = group.kind >= kReductionKind;
    for (std::int32_t g : gpus)
      sites.push_back(reduction ? &dp_sites[{g, group.kind - kReductionKind}]
                                : &shared.sites[static_cast<std::size_t>(g)][static_cast<std::size_t>(group.kind)]);
    join_group(sites, reduction ? "dp" : comm_kind_name(static_cast<CommKind>(group.kind)), gpus.front(), out);
  }
}

// With sampled routing each EP rank's experts run at its own load (the all-to-alls wait for the busiest):
// per EP rank its load (max over its experts / mean) and, per distinct load, one set of costs; none otherwise.
struct EpCosts {
  std::vector<double> load;            // per EP rank
  std::vector<std::int64_t> load_id;   // per EP rank: index into costs
  std::vector<StepCosts> costs;
};
EpCosts costs_by_ep_rank(const Job& job, bool full) {
  const ParallelLayout& p = job.layout;
  EpCosts out;
  if (!full || !job.model.moe || !job.training.sampled_routing || p.ep <= 1) return out;
  const double sp = p.sequence_parallel ? static_cast<double>(p.tp) : 1.0;
  const double tokens = static_cast<double>(p.micro_batch * (job.training.seq_len / p.cp)) / sp;
  out.load = sampled_moe_loads(p.ep, job.model.moe->experts, job.model.moe->top_k, tokens, job.training.routing_seed);
  std::map<double, std::int64_t> seen;
  for (double load : out.load) {
    auto [it, fresh] = seen.emplace(load, static_cast<std::int64_t>(out.costs.size()));
    if (fresh) out.costs.push_back(step_costs(job, load));
    out.load_id.push_back(it->second);
  }
  return out;
}

}  // namespace

// The step's task graph before it is built: about 2.6 KB per op instance (measured with /usr/bin/time on
// GPT-3 175B interleaved, pp16 vp2: 19,200 micro-batches symmetric, 1.23 M ops in 3.1 GB; --full on
// 1,024 GPUs, 786 K op instances in 2.05 GB, 3.15 M in 8.15 GB), an instance per pipeline op on every GPU
// simulated (one per pipeline rank; --full one per pipeline rank of every class of alike replicas).
void check_step_size(const Job& job, std::int64_t replicas, bool full) {
  const ParallelLayout& p = job.layout;
  const double ops = schedule_op_estimate(p.schedule, {.ranks = p.pp, .microbatches = job.microbatches(), .vp = p.vp});
  const auto per_rank = static_cast<double>(replicas);
  constexpr double kBytesPerOpInstance = 2.6e3;
  sim::check_memory_estimate(
      ops * per_rank * kBytesPerOpInstance,
      full ? fmt::format("the full-rank step ({:.3g} pipeline ops on each of {:.0f} GPUs per pipeline rank that differ)", ops, per_rank)
           : fmt::format("the step ({:.3g} pipeline ops)", ops),
      full ? "run it without --full, or with fewer micro-batches per step or fewer GPUs that differ" : "fewer micro-batches per step or fewer stages");
}

StepSimulation simulate_step(const Job& job, const StepCosts& costs, StepMode mode) {
  const bool full = mode != StepMode::symmetric;
  // A step the closed forms already put past the clock is refused before its graph is built.
  const double estimate = estimate_step(job.layout, job.microbatches(), costs).step_time;
  if (!(estimate <= 2 * sim::kMaxDurationSeconds))
    throw sim::TimeRangeError(fmt::format("the step would take about {:.3g} s (the closed-form estimate), beyond the simulator's clock "
                                          "(106 days in integer picoseconds): the model, sequence or batch sizes are too large for one step",
                                          estimate));
  StepSimulation out;
  out.full = full;
  out.job_gpus = job.layout.gpus();
  const ParallelLayout& p = job.layout;
  out.schedule = step_schedule(job.layout, job.microbatches(), costs);
  const PipelineSchedule& s = out.schedule;
  StepShared shared;
  const MemoryPlan plan = plan_memory(job);
  for (const StagePlan& st : plan.stages) {
    shared.activation_bytes.push_back(stage_activation_bytes(job, st));
    shared.weight_stash_bytes.push_back(stage_weight_stash_bytes(job, st));
  }
  const EpCosts by_ep = costs_by_ep_rank(job, full);
  out.ep_load = by_ep.load;
  std::optional<FullRankLayout> layout;
  if (full) {
    std::string why;
    std::optional<Placement> place = Placement::make(p, job.cluster.fabric.gpus_per_node, &why);
    if (!place) throw std::invalid_argument(why);
    layout = full_rank_layout(job, *place, s.kind, costs.network, by_ep.load_id, mode == StepMode::every_gpu);
    out.class_rounds = layout->classes.rounds;
    out.fabric = layout->fabric;
  }
  // The replicas built: symmetric mode one standing for all; full mode the first of each class.
  const std::size_t built = layout ? layout->classes.first.size() : 1;
  check_step_size(job, static_cast<std::int64_t>(built), full);
  std::vector<std::vector<std::int32_t>> machine_gpu(built);
  for (std::size_t c = 0; c < built; ++c)
    for (std::int64_t r = 0; r < p.pp; ++r) {
      const std::int32_t rank = layout ? layout->replicas[static_cast<std::size_t>(layout->classes.first[c])][static_cast<std::size_t>(r)]
                                       : static_cast<std::int32_t>(r);
      const std::int64_t alike = layout ? layout->classes.size[c] : job.layout.gpus() / p.pp;
      std::string name = !layout ? fmt::format("pp rank {}", r)
                         : alike > 1 ? fmt::format("GPU {} (pp {}, and {} alike)", rank, r, alike - 1)
                                     : fmt::format("GPU {} (pp {})", rank, r);
      const std::int32_t gpu = out.machine.add_gpu(name, costs.sms);
      machine_gpu[c].push_back(gpu);
      out.gpu_pp.push_back(static_cast<std::int32_t>(r));
      out.gpu_rank.push_back(rank);
      out.gpu_count.push_back(alike);
      shared.streams.push_back({out.machine.add_stream(gpu, "compute"), out.machine.add_stream(gpu, "comm (TP/EP/CP)"),
                                out.machine.add_stream(gpu, "pipeline send"), out.machine.add_stream(gpu, "data parallel")});
      GpuCondition condition;
      std::array<double, kCommKinds> scale{1, 1, 1, 1, 1};
      if (layout) {
        condition = layout->conditions[static_cast<std::size_t>(rank)];
        scale = layout->comm_scale[static_cast<std::size_t>(rank)];
        out.gpu_ep.push_back(layout->replica_ep[static_cast<std::size_t>(layout->classes.first[c])]);
      }
      out.gpu_condition.push_back(condition);
      shared.compute_scale.push_back(1.0 / condition.compute);
      shared.comm_scale.push_back(scale);
    }
  shared.sites.resize(out.gpu_pp.size());
  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<Site>> dp_sites;
  for (std::size_t c = 0; c < built; ++c) {
    const StepCosts& mine =
        by_ep.costs.empty() ? costs
                            : by_ep.costs[static_cast<std::size_t>(by_ep.load_id[static_cast<std::size_t>(out.gpu_ep[machine_gpu[c][0]])])];
    StepOps ops(job, mine, out, shared, machine_gpu[c], c == 0);
    ops.add_param_gathers(s);
    PipelineTasks tasks = build_pipeline_graph(s, out.graph, ops);
    add_tail(job, mine, s, tasks, ops, out, dp_sites);
  }
  if (layout) join_full_groups(*layout, machine_gpu, dp_sites, shared, out);
  out.graph.finalize();
  try {
    out.result = sim::simulate(out.graph, out.machine);
  } catch (const sim::DeadlockError& e) {
    throw ScheduleError(fmt::format("the {} step cannot run: {}", schedule_name(s.kind), e.what()));
  }
  out.step_time = sim::to_seconds(out.result.makespan);
  out.ranks.resize(static_cast<std::size_t>(s.ranks));
  account_step(out);
  std::vector<std::optional<sim::Time>> fails_at;
  for (const GpuCondition& c : out.gpu_condition)
    fails_at.push_back(c.fails_at ? std::optional<sim::Time>(sim::nearest_time(*c.fails_at)) : std::nullopt);
  if (std::any_of(fails_at.begin(), fails_at.end(), [](const auto& f) { return f.has_value(); }))
    out.stalls = sim::stalls_after_failures(out.graph, out.machine, out.result, fails_at);
  std::vector<std::int64_t> inflight = peak_activations(s);
  for (std::size_t r = 0; r < out.ranks.size(); ++r) {
    const RankMemory& m = plan.ranks[r];
    out.ranks[r].peak_bytes += m.total_bytes() - m.activations_bytes;
    out.ranks[r].peak_inflight = inflight[r];
  }
  return out;
}

}  // namespace plumb
