#include "models/costs/step_costs.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <stdexcept>

#include "models/costs/collective.hpp"
#include "models/costs/data_parallel_terms.hpp"
#include "models/costs/muon_cost.hpp"
#include "models/memory/memory.hpp"
#include "models/costs/op_cost.hpp"
#include "models/parallel/placement.hpp"

namespace plumb {

double sampled_moe_imbalance(std::int64_t ep, std::int64_t experts, std::int64_t top_k, double tokens_per_rank,
                             std::uint64_t seed) {
  std::vector<double> loads = sampled_moe_loads(ep, experts, top_k, tokens_per_rank, seed);
  return *std::max_element(loads.begin(), loads.end());
}

std::vector<double> sampled_moe_loads(std::int64_t ep, std::int64_t experts, std::int64_t top_k, double tokens_per_rank,
                                      std::uint64_t seed) {
  if (ep <= 1) return {1.0};
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> pick(static_cast<std::size_t>(experts));
  std::vector<double> load(static_cast<std::size_t>(ep), 0.0);
  const std::int64_t per_rank = experts / ep;
  const auto tokens = static_cast<std::int64_t>(std::llround(tokens_per_rank)) * ep;
  for (std::int64_t t = 0; t < tokens; ++t) {
    std::iota(pick.begin(), pick.end(), 0);
    for (std::int64_t k = 0; k < top_k; ++k) {  // partial Fisher–Yates: k distinct experts
      std::uniform_int_distribution<std::int64_t> u(k, experts - 1);
      std::swap(pick[static_cast<std::size_t>(k)], pick[static_cast<std::size_t>(u(rng))]);
      load[static_cast<std::size_t>(pick[static_cast<std::size_t>(k)] / per_rank)] += 1;
    }
  }
  double mean = static_cast<double>(tokens * top_k) / static_cast<double>(ep);
  for (double& l : load) l /= mean;
  return load;
}

namespace {

// Group placements and link speeds, from the layout's rank placement on the fabric.
struct Groups {
  CollectiveLinks links;
  GroupPlacement tp, ep, cp, dp, edp;
  bool pp_crosses_nodes = false;
};

// A group of `size` GPUs over at least `nodes` nodes, spread evenly as the collective model needs:
// the next node count that divides the group.
GroupPlacement even_group(std::int64_t size, std::int64_t nodes) {
  nodes = std::clamp<std::int64_t>(nodes, 1, std::max<std::int64_t>(1, size));
  while (size % nodes != 0) ++nodes;
  return {size, nodes};
}

Groups groups_of(const ParallelLayout& layout, const Cluster& cluster) {
  Groups g;
  g.links = CollectiveLinks::of(cluster.gpu, cluster.fabric);
  std::string why;
  auto placement = Placement::make(layout, cluster.fabric.gpus_per_node, &why);
  if (!placement) throw std::invalid_argument(why);
  for (const GroupSpan& s : placement->spans()) {
    GroupPlacement p = even_group(s.size, s.nodes_max);
    if (s.kind == ParallelDim::tp) g.tp = p;
    else if (s.kind == ParallelDim::ep) g.ep = p;
    else if (s.kind == ParallelDim::cp) g.cp = p;
    else if (s.kind == ParallelDim::dp) g.dp = p;
    else if (s.kind == ParallelDim::edp) g.edp = p;
    else if (s.kind == ParallelDim::pp) g.pp_crosses_nodes = s.nodes_max > 1;
  }
  auto one = [](GroupPlacement& p, std::int64_t size) {
    if (size <= 1) p = {1, 1};
  };
  one(g.tp, layout.tp);
  one(g.ep, layout.ep);
  one(g.cp, layout.cp);
  one(g.dp, layout.dp);
  one(g.edp, layout.edp());
  return g;
}

class StageCoster {
 public:
  StageCoster(const Job& job, std::optional<double> expert_load)
      : job_(job),
        ctx_(op_context(job.layout, job.training, job.cluster.gpu)),
        groups_(groups_of(job.layout, job.cluster)),
        recompute_(job.layout.recompute) {
    const ModelSpec& m = job.model;
    const double sp = job.layout.sequence_parallel ? static_cast<double>(job.layout.tp) : 1.0;
    activation_bytes_ = ctx_.tokens * static_cast<double>(m.hidden) * 2.0;  // bf16 between layers
    if (m.moe) {
      imbalance_ = job.training.sampled_routing
                       ? sampled_moe_imbalance(job.layout.ep, m.moe->experts, m.moe->top_k, ctx_.tokens / sp,
                                               job.training.routing_seed)
                       : job.training.moe_imbalance;
      DispatchShape d{ctx_.tokens / sp, static_cast<double>(m.hidden), m.moe->top_k, m.moe->max_nodes};
      // DeepSeek-V3 §3.3 (low-precision communication): the activations before the experts' up-projections
      // are dispatched in fp8, and so are the activation gradients before their down-projections (the
      // backward of the combine, itself a dispatch); both combines (forward, and the backward of the
      // dispatch) stay in bf16. Without fp8 everything moves in bf16.
      DispatchShape low = d;
      low.bytes_per_token *= job.training.precision == Precision::fp8 ? 1.0 : 2.0;
      d.bytes_per_token *= 2.0;
      a2a_dispatch_ = job.layout.ep > 1 ? moe_dispatch_cost(low, groups_.ep, groups_.links).seconds * imbalance_ : 0;
      a2a_bf16_ = job.layout.ep > 1 ? moe_dispatch_cost(d, groups_.ep, groups_.links).seconds * imbalance_ : 0;
      expert_load_ = expert_load.value_or(imbalance_);
    }
    if (m.moe && job.layout.moe_execution == MoeExecution::waves) plan_waves(sp);
    if (job.layout.cp > 1 && job.layout.cp_comm != CpComm::all_to_all) {
      // Ring attention: each step passes the local keys and values to the next CP rank, cp−1 steps,
      // beside the attention of the block in hand; backward sends their gradients around as well. The
      // keys and values as the kernel gets them: at every query head where the framework repeats them.
      const AttentionSpec& a = m.attention;
      double kv = ctx_.tokens * kv_heads_on_rank(a, job.layout.tp, job.layout.cp_merge.repeated_kv) *
                  static_cast<double>(a.qk_head_dim() + a.out_head_dim()) * 2.0;
      GroupPlacement pair{2, groups_.cp.nodes > 1 ? 2 : 1};
      cp_fwd_ = static_cast<double>(job.layout.cp - 1) * collective_seconds(CollectiveOp::send_recv, kv, pair, groups_.links);
      // All-gathered instead: every rank's keys and values at once, cp times the local ones.
      if (job.layout.cp_comm == CpComm::all_gather)
        cp_gather_ = collective_seconds(CollectiveOp::all_gather, kv * static_cast<double>(job.layout.cp), groups_.cp, groups_.links);
    }
  }

  double imbalance() const { return imbalance_; }
  // One MoE layer's forward as fused waves, beside the separate kernels (nullopt unless waves).
  // `separate`: the same layer's ops as separate kernels, whose routed-expert ops run between an FP8
  // dispatch and a BF16 combine all-to-all (priced as the separate mode prices them).
  std::optional<MoeWavesCost> waves_of(const std::vector<LayerOp>& ops, const std::vector<LayerOp>& separate) const {
    if (!waves_) return std::nullopt;
    double fused = 0, unfused = 0;
    for (const LayerOp& op : ops)
      if (op.fused_moe) fused += seconds(op, 0);
    // Its GEMMs (and the input's fp8 cast, timed on both sides); its memory passes are the baseline's.
    for (const LayerOp& op : separate)
      if (routed_moe_op(op) && (op.cls != OpClass::memory || expert_input_cast(op))) unfused += seconds(op, 0);
    MoeWavesCost c = *waves_;
    c.forward = wave_pass(fused, true);
    c.separate_forward = a2a_dispatch_ + unfused + separate_memory_ + a2a_bf16_;
    return c;
  }

  // The wave pipeline of one MoE layer's pass, given the fused ops' compute `seconds` on this rank.
  WavePipeline wave_pass(double seconds, bool forward) const {
    WavePipeline p = forward ? wave_forward_ : wave_backward_;
    p.compute = seconds;
    return p;
  }
  std::array<bool, kCommKinds> network() const {
    std::array<bool, kCommKinds> n{};
    n[static_cast<std::size_t>(CommKind::tp)] = groups_.tp.nodes > 1;
    n[static_cast<std::size_t>(CommKind::ep)] = groups_.ep.nodes > 1;
    n[static_cast<std::size_t>(CommKind::cp)] = groups_.cp.nodes > 1;
    n[static_cast<std::size_t>(CommKind::pp)] = groups_.pp_crosses_nodes;
    // DualPipe's mirror ranks are a pipeline apart, so their group spans nodes whenever the pipeline does.
    n[static_cast<std::size_t>(CommKind::dp)] = groups_.dp.nodes > 1 || groups_.edp.nodes > 1 ||
                                                (schedule_family(job_.layout.schedule).layout == StageLayout::mirrored && groups_.pp_crosses_nodes);
    return n;
  }

  struct LayerPasses {
    Pass forward, input_grad, weight_grad, backward;
  };

  LayerPasses passes(const std::vector<LayerOp>& ops, bool transformer_layer) const {
    LayerPasses lp;
    // A fused MoE kernel's ops: their compute is summed and the wave pipeline placed where the kernel
    // ends (the last of them in forward, the first in backward).
    std::size_t first_fused = ops.size(), last_fused = ops.size();
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (ops[i].fused_moe) {
        if (first_fused == ops.size()) first_fused = i;
        last_fused = i;
      }
    double fused = 0;
    auto add_waves = [&](Pass& pass, bool forward) {
      const WavePipeline w = wave_pass(fused, forward);
      pass.add_kernel(w.compute, host_);  // one persistent kernel
      pass.add_comm(w.total() - w.compute, CommKind::ep);  // what the pipeline leaves exposed
      fused = 0;
    };
    bool gathered = false;  // async TP: an all-gather waiting for the GEMM that reads it
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const LayerOp& op = ops[i];
      if (op.fused_moe) {
        fused += seconds(op, 0);
        if (i == last_fused) add_waves(lp.forward, true);
        continue;
      }
      if (op.before == CommPoint::tp_enter && async_gather_forward(ops, i)) gathered = true;
      else add_tp_or_ep(lp.forward, op.before, true);
      double f = seconds(op, 0);
      // One collective fuses with a GEMM: the gather it reads, else the reduce-scatter of its output.
      const bool gather = gathered && op.cls == OpClass::gemm;
      const bool scatter = !gather && async_tp() && op.cls == OpClass::gemm && op.after == CommPoint::tp_exit;
      if (gather) {
        add_async_tp(lp.forward, op, 0, CollectiveOp::all_gather);
        gathered = false;
      } else if (scatter) {
        add_async_tp(lp.forward, op, 0, CollectiveOp::reduce_scatter);
      } else if (compressed_cp(op)) {  // the neighbour's boundary entries and the gathered compressed KV, then attention
        lp.forward.add_comm(compressed_cp_seconds(op, CollectiveOp::all_gather), CommKind::cp);
        lp.forward.add_kernel(f, host_);
      } else if (exchange_cp(op)) {  // q, k, v to their heads' ranks, the kernel over every key, the output back
        lp.forward.add_comm(cp_exchange_seconds(op.cp_exchange_in), CommKind::cp);
        lp.forward.add_kernel(f, host_);
        lp.forward.add_comm(cp_exchange_seconds(op.cp_exchange_out), CommKind::cp);
      } else if (ring_cp(op) && gathered_cp()) {  // the gather beside the first block, the others after it
        lp.forward.add_overlapped(f / cp(), cp_gather_, CommKind::cp, host_);
        lp.forward.add_kernel(f - f / cp(), host_);
      } else if (ring_cp(op)) {
        lp.forward.add_overlapped(f, cp_fwd_, CommKind::cp, host_);
      } else {
        lp.forward.add_kernel(f, host_);
      }
      if (!scatter) add_tp_or_ep(lp.forward, op.after, true);
    }
    // Backward: recomputation first (Megatron-LM recomputes a layer's forward right before its
    // backward), then the ops in reverse; what followed an op in forward now precedes it.
    Pass recompute;
    if (recompute_.full && transformer_layer) {
      recompute = lp.forward;
    } else {
      for (const LayerOp& op : ops)
        if (double t = recompute_seconds(op, recompute_, job_.model.attention, transformer_layer, job_.cluster.gpu, job_.training); t > 0)
          recompute.add_kernel(expert_op(op) ? t * expert_load_ : t, host_);
    }
    for (Pass* p : {&lp.input_grad, &lp.backward}) {
      p->append(recompute);
      for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
        const LayerOp& op = *it;
        const double dw = p == &lp.backward ? seconds(op, 2) : 0.0, dx = seconds(op, 1) + dw;
        if (op.fused_moe) {
          fused += dx;
          if (static_cast<std::size_t>(ops.rend() - it) - 1 == first_fused) add_waves(*p, false);
          continue;
        }
        // Async TP: the output gradient's all-gather with the input gradient's matmul (the weight
        // gradient reads the gathered copy after it), the input gradient's matmul with its reduce-scatter.
        const bool gather = async_tp() && op.cls == OpClass::gemm && op.after == CommPoint::tp_exit && gathers_into(op);
        const bool scatter =
            !gather && async_tp() && op.cls == OpClass::gemm && op.before == CommPoint::tp_enter && !op.sums_input_grads;
        const bool overlapped = !gather && !scatter && overlaps_tp_backward(op);
        if (!gather) add_tp_or_ep(*p, op.after, false);
        if (gather || scatter) {
          add_async_tp(*p, op, 1, gather ? CollectiveOp::all_gather : CollectiveOp::reduce_scatter);
          p->add_kernel(dw, host_);
        } else if (compressed_cp(op)) {  // gradients back the same way: reduce-scatter and the boundary's send
          add_backward_kernels(*p, dx - dw, dw);
          p->add_comm(compressed_cp_seconds(op, CollectiveOp::reduce_scatter), CommKind::cp);
        } else if (exchange_cp(op)) {  // the output gradient over, the q, k, v gradients back
          p->add_comm(cp_exchange_seconds(op.cp_exchange_out), CommKind::cp);
          add_backward_kernels(*p, dx - dw, dw);
          p->add_comm(cp_exchange_seconds(op.cp_exchange_in), CommKind::cp);
        } else if (ring_cp(op) && gathered_cp()) {  // gathered again, then the gradients around the ring
          p->add_overlapped(dx / cp(), cp_gather_, CommKind::cp, host_);
          p->add_overlapped(dx - dx / cp(), cp_fwd_, CommKind::cp, host_);
        } else if (ring_cp(op)) {
          p->add_overlapped(dx, 2 * cp_fwd_, CommKind::cp, host_);
        } else if (overlapped) {
          add_tp_backward_overlapped(*p, dx - dw, dw);
        } else {
          add_backward_kernels(*p, dx - dw, dw);
        }
        if (!scatter && !overlapped) add_tp_or_ep(*p, op.before, false);
      }
    }
    for (const LayerOp& op : ops) lp.weight_grad.add_kernel(seconds(op, 2), host_);
    return lp;
  }

  // Megatron's scatter/gather (Narayanan et al. SC'21 §4.1): under tensor parallelism each rank sends
  // only its 1/t slice of the boundary activations, over its own NIC; without sequence parallelism
  // the receiving ranks then all-gather the slices over NVLink.
  double p2p() const {
    if (job_.layout.pp <= 1) return 0;
    GroupPlacement pair{2, groups_.pp_crosses_nodes ? 2 : 1};
    // With mHC the boundary carries every residual stream (DeepSeek-V4 §2.2: more bytes between stages).
    const double streams = static_cast<double>(job_.model.residual_streams);
    const double bytes = streams * activation_bytes_ / static_cast<double>(job_.layout.tp);
    double t = collective_seconds(CollectiveOp::send_recv, bytes, pair, groups_.links);
    // Where the cluster's own exchange was measured, it is a floor: what the framework's calls add.
    if (const auto& measured = job_.cluster.fabric.pipeline_send) t = std::max(t, measured->seconds(bytes));
    if (job_.layout.tp > 1 && !job_.layout.sequence_parallel)
      t += collective_seconds(CollectiveOp::all_gather, streams * activation_bytes_, groups_.tp, groups_.links);
    return t;
  }

  // Where the data-parallel collectives run: dense parameters over DP times CP, experts over expert DP
  // (DualPipe: each stage's two mirror ranks join its group).
  // Under HSDP the dense group is a shard group, dp_shard consecutive data-parallel ranks on their share of
  // the DP group's nodes, and its replicas are one rank of each shard group, a node apart once a shard group
  // fills a node.
  DataParallelGroups data_parallel_groups() const {
    const ParallelLayout& p = job_.layout;
    GroupPlacement dense = groups_.dp, replicas{1, 1};
    if (p.dp_replicas() > 1) {
      const std::int64_t shard = p.dp_shard_size(), nodes = (dense.nodes * shard + p.dp - 1) / p.dp;
      replicas = even_group(p.dp_replicas(), std::min(p.dp_replicas(), dense.nodes));
      dense = even_group(shard, std::max<std::int64_t>(1, nodes));
    }
    if (p.cp > 1) dense = even_group(dense.gpus * p.cp, dense.nodes * groups_.cp.nodes);
    DataParallelGroups out{mirrored(dense), mirrored(groups_.edp), groups_.links};
    out.replicas = replicas;
    return out;
  }

 private:
  bool async_tp() const { return job_.layout.tp_overlap == TpOverlap::async; }
  // Under fp8 a GEMM reads its all-gather's output directly only where the cast came before the gather
  // (fp8 all-gathers); a gathered 16-bit activation that is cast first is not a matmul's operand, and
  // Inductor's pass leaves that gather alone.
  bool gathers_into(const LayerOp& gemm) const {
    return !ctx_.fp8_quantization || gemm.high_precision || job_.layout.fp8_all_gathers;
  }
  // Whether the forward all-gather at ops[i] runs fused with the GEMM that reads it: ops[i] itself, or
  // the GEMM after ops[i] when ops[i] is that GEMM's fp8 cast (the communication point moved to it).
  bool async_gather_forward(const std::vector<LayerOp>& ops, std::size_t i) const {
    if (!async_tp()) return false;
    if (ops[i].cls == OpClass::gemm) return true;
    return i + 1 < ops.size() && ops[i].cls == OpClass::memory && ops[i + 1].cls == OpClass::gemm && gathers_into(ops[i + 1]);
  }
  // PyTorch's async TP (torch/distributed/_symmetric_memory, 2025): `gemm`'s pass `pass` in tp chunks of
  // its rows, each a GEMM of its own shape (the GEMM model prices its tiles and waves). All-gather: the
  // local shard's chunk first, then for each peer its shard copied in and multiplied; reduce-scatter: each
  // peer's chunk multiplied and copied out, the local one last, then one kernel summing the tp partial
  // products (read tp × shard, write the shard). The copies are cudaMemcpyAsync over NVLink peer
  // mappings, run by the copy engines beside the matmuls, at the fabric's NVLink rate per GPU (one peer at
  // a time; a DGX H100's copy-engine P2P measures 371–377 GB/s one way, NVIDIA/nccl issue #1264, beside
  // NCCL's 370). The first chunk has nothing to overlap: chunk + max(the other chunks, the copies).
  // Barriers and the local shard's copy into its buffer are left out.
  void add_async_tp(Pass& p, const LayerOp& gemm, int pass, CollectiveOp op) const {
    const double n = static_cast<double>(job_.layout.tp), bytes = tp_bytes(op);
    const double one = seconds(row_chunk(gemm, n), pass);
    p.add_kernel(one, host_);
    p.add_overlapped(one * (n - 1), (n - 1) * bytes / n / groups_.links.nvlink, CommKind::tp, host_, true);
    if (op == CollectiveOp::reduce_scatter) p.add_kernel(job_.cluster.gpu.hbm_seconds(bytes * (1 + 1 / n)), host_);
  }
  // A column-parallel linear's backward whose TP traffic runs beside its GEMMs (ParallelLayout::tp_backward_overlap).
  bool overlaps_tp_backward(const LayerOp& op) const {
    return job_.layout.tp_backward_overlap && job_.layout.tp > 1 && op.cls == OpClass::gemm && op.before == CommPoint::tp_enter;
  }
  // Its input shard gathered again beside the input gradient's GEMM (sequence parallelism), then the input
  // gradient's reduce-scatter or all-reduce beside the weight gradient's GEMM, or after the input gradient
  // when the weight gradient is deferred (a split backward).
  void add_tp_backward_overlapped(Pass& p, double input_grad, double weight_grad) const {
    const double regather = job_.layout.sequence_parallel ? tp_or_ep(CommPoint::tp_enter, true) : 0.0;
    const double reduce = tp_or_ep(CommPoint::tp_enter, false);
    p.add_overlapped(input_grad, regather, CommKind::tp, host_);
    if (regather > 0) add_sequence_parallel_copy(p, CommPoint::tp_enter, true);
    if (weight_grad > 0) p.add_overlapped(weight_grad, reduce, CommKind::tp, host_);
    else p.add_comm(reduce, CommKind::tp);
    if (reduce > 0) add_sequence_parallel_copy(p, CommPoint::tp_enter, false);
  }
  // An op's input gradient and weight gradient: two kernels where both do work.
  void add_backward_kernels(Pass& p, double input_grad, double weight_grad) const {
    p.add_kernel(input_grad, host_);
    p.add_kernel(weight_grad, host_);
  }
  double seconds(const LayerOp& op, int pass) const {
    double t = op_time(op, pass, job_.cluster.gpu, job_.training).seconds;
    return expert_op(op) ? t * expert_load_ : t;
  }
  // Ring attention's KV passes beside dense attention; compressed attention exchanges its own way.
  bool ring_cp(const LayerOp& op) const {
    return op.cls == OpClass::attention && job_.model.attention.kind != AttentionKind::compressed;
  }
  // PyTorch's all-gather rotation of K and V (ParallelLayout::cp_comm all_gather).
  bool gathered_cp() const { return job_.layout.cp > 1 && job_.layout.cp_comm == CpComm::all_gather; }
  double cp() const { return static_cast<double>(job_.layout.cp); }
  // All-to-all CP: the exchanges on the CP group, blocking the kernel that needs them.
  bool exchange_cp(const LayerOp& op) const { return op.cp_exchange_in > 0 && job_.layout.cp > 1; }
  double cp_exchange_seconds(double bytes) const { return collective_seconds(CollectiveOp::all_to_all, bytes, groups_.cp, groups_.links); }
  bool compressed_cp(const LayerOp& op) const { return job_.layout.cp > 1 && (op.cp_boundary_bytes > 0 || op.cp_gather_bytes > 0); }
  double compressed_cp_seconds(const LayerOp& op, CollectiveOp gather) const {
    GroupPlacement pair{2, groups_.cp.nodes > 1 ? 2 : 1};
    return collective_seconds(CollectiveOp::send_recv, op.cp_boundary_bytes, pair, groups_.links) +
           (op.cp_gather_bytes > 0 ? collective_seconds(gather, op.cp_gather_bytes, groups_.cp, groups_.links) : 0.0);
  }
  GroupPlacement mirrored(GroupPlacement g) const {
    return schedule_family(job_.layout.schedule).layout == StageLayout::mirrored ? even_group(g.gpus * 2, g.nodes * 2) : g;
  }
  static CommKind kind_of(CommPoint c) {
    return c == CommPoint::ep_dispatch || c == CommPoint::ep_combine ? CommKind::ep : CommKind::tp;
  }
  // The collective at `c`, and under sequence_parallel_copies the copy that puts a sequence-parallel
  // all-gather's output (or a reduce-scatter's input) in order: the whole gathered activation read and
  // written once at the HBM rate, on the compute stream.
  // The bytes a TP collective moves: the 16-bit activation, or half of it where the framework gathers fp8.
  double tp_bytes(CollectiveOp op) const {
    return op == CollectiveOp::all_gather && job_.layout.fp8_all_gathers ? activation_bytes_ / 2 : activation_bytes_;
  }
  CollectiveOp tp_op(CommPoint c, bool forward) const {
    const bool sp = job_.layout.sequence_parallel, gather = (c == CommPoint::tp_enter) == forward;
    return gather ? CollectiveOp::all_gather : sp ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce;
  }
  void add_tp_or_ep(Pass& pass, CommPoint c, bool forward) const {
    const double t = tp_or_ep(c, forward);
    pass.add_comm(t, kind_of(c));
    const bool tp_collective = c == CommPoint::tp_enter || c == CommPoint::tp_exit;
    if (t > 0 && tp_collective) add_sequence_parallel_copy(pass, c, forward);
  }
  void add_sequence_parallel_copy(Pass& pass, CommPoint c, bool forward) const {
    if (job_.layout.sequence_parallel && job_.layout.sequence_parallel_copies)
      pass.add_kernel(job_.cluster.gpu.hbm_seconds(2.0 * tp_bytes(tp_op(c, forward))), host_);
  }
  double tp_or_ep(CommPoint c, bool forward) const {
    const bool sp = job_.layout.sequence_parallel;
    auto tp = [&](CollectiveOp op) { return collective_seconds(op, tp_bytes(op), groups_.tp, groups_.links); };
    switch (c) {
      case CommPoint::none: return 0;
      case CommPoint::tp_enter:
      case CommPoint::tp_exit: {
        // Without sequence parallelism the gather side is the identity (Megatron's f and g operators).
        const CollectiveOp op = tp_op(c, forward);
        return op == CollectiveOp::all_gather && !sp ? 0.0 : tp(op);
      }
      // Dispatch-shaped traffic (tokens to experts) is the forward's dispatch and the combine's backward.
      case CommPoint::ep_dispatch: return forward ? a2a_dispatch_ : a2a_bf16_;
      case CommPoint::ep_combine: return forward ? a2a_bf16_ : a2a_dispatch_;
    }
    return 0;
  }

  const Job& job_;
  double host_ = job_.training.host_overhead;  // the host's time to issue a kernel
  OpContext ctx_;
  Groups groups_;
  Recompute recompute_;
  double activation_bytes_ = 0;
  double imbalance_ = 1.0;
  double expert_load_ = 1.0;
  double a2a_dispatch_ = 0, a2a_bf16_ = 0, cp_fwd_ = 0, cp_gather_ = 0;
  double separate_memory_ = 0;  // fused waves: the memory passes of the non-fused path beside them
  WavePipeline wave_forward_, wave_backward_;  // their compute filled in per pass
  std::optional<MoeWavesCost> waves_;

  // DeepSeek-V4's fused waves: the busiest rank's token copies, pulled in FP8 with per-32 UE8M0 scales
  // and a 4-byte routing weight, returned in BF16 (DeepGEMM tests/test_mega_moe.py counts the same bytes),
  // the share from other ranks over NVLink; the backward moves BF16 gradients both ways (an assumption:
  // DeepGEMM's kernel is the forward). The final top-k sum reads the k returned copies and writes the
  // output in BF16 from HBM, and takes no less than one token's chain of loads (reduction_floor).
  void plan_waves(double sp) {
    const ModelSpec& m = job_.model;
    const ParallelLayout& p = job_.layout;
    const GpuSpec& gpu = job_.cluster.gpu;
    const double h = static_cast<double>(m.hidden), k = static_cast<double>(m.moe->top_k);
    const double tokens = ctx_.tokens / sp, pairs = tokens * k * imbalance_;
    const std::int64_t ffn = m.moe->expert_ffn_hidden / p.etp;
    const WavePlan plan = wave_plan(pairs, m.moe->experts / p.ep, ffn, gpu.sms);
    const double link = job_.cluster.fabric.nvlink_effective_per_gpu.value_or(gpu.nvlink_bandwidth_per_direction);
    const double remote = static_cast<double>(p.ep - 1) / static_cast<double>(p.ep);
    for (WavePipeline* w : {&wave_forward_, &wave_backward_}) {
      w->waves = plan.waves;
      w->reduction = std::max(gpu.hbm_seconds(tokens * h * 2.0 * (1.0 + k)), reduction_floor(k));
      w->fixed = kMegaMoeFixedSeconds;
      w->end_barrier = kMegaMoeEndBarrierSeconds;
      w->combine = pairs * 2.0 * h * remote / link;
    }
    const double ep = static_cast<double>(p.ep), load[] = {imbalance_, imbalance_, 1.0};
    const auto baseline = separate_path_memory_bytes(tokens, k, groups_reached(ep, k), h, static_cast<double>(ffn),
                                                     job_.training.precision == Precision::fp8);
    for (std::size_t i = 0; i < baseline.size(); ++i) separate_memory_ += gpu.hbm_seconds(baseline[i] * load[i]) + gpu.kernel_overhead;
    wave_forward_.dispatch = pairs * (h + h / 32.0 + 4.0) * remote / link;
    wave_backward_.dispatch = pairs * 2.0 * h * remote / link;
    MoeWavesCost c;
    c.plan = plan;
    c.flop_per_byte_bound = 2.0 * static_cast<double>(ffn);
    const MathDtype math = gpu.peak_dense.count(MathDtype::fp8) ? MathDtype::fp8 : MathDtype::bf16;
    c.flop_per_byte = gpu.peak_dense.at(math) * gpu.sustained_scale(math) / link;
    waves_ = c;
  }
};

// Blocking sends: the op ends when its output has reached the neighbour stage.
void add_blocking_sends(StageCost& s, const StagePlan& sp, std::int64_t stages) {
  s.p2p_in_passes = true;
  if (sp.index + 1 < stages) s.forward.add_comm(s.p2p, CommKind::pp);
  if (sp.index > 0) {
    s.input_grad.add_comm(s.p2p, CommKind::pp);
    s.backward.add_comm(s.p2p, CommKind::pp);
  }
}

}  // namespace

LayerTimes layer_times(const Job& job, std::int64_t layer) {
  StageCoster coster(job, std::nullopt);
  const OpContext ctx = op_context(job.layout, job.training, job.cluster.gpu);
  StageCoster::LayerPasses lp = coster.passes(layer_ops(job.model, layer, ctx), true);
  return {lp.forward.span(), lp.backward.span()};
}

StepCosts step_costs(const Job& job, std::optional<double> expert_load) {
  const ModelSpec& m = job.model;
  const ParallelLayout& p = job.layout;
  StageCoster coster(job, expert_load);
  OpContext ctx = op_context(job.layout, job.training, job.cluster.gpu);
  StepCosts out;
  out.sms = static_cast<std::int32_t>(job.cluster.gpu.sms);
  out.comm_sms = p.comm_sms;  // below the SM count: finalize_layout checks it
  out.moe_imbalance = coster.imbalance();
  out.network = coster.network();
  if (schedule_family(p.schedule).orders_by_op_times) out.weight_stash_share = weight_stash_share(job);

  // Each layer kind is costed once: every dense layer is alike, and so is every MoE layer, unless their
  // attention or routing differs (DeepSeek-V4's window-only, CSA and HCA layers).
  std::map<LayerKind, StageCoster::LayerPasses> kinds;
  for (std::int64_t l = 0; l <= m.mtp_layer(); ++l)
    if (!kinds.contains(m.layer_kind(l))) kinds.emplace(m.layer_kind(l), coster.passes(layer_ops(m, l, ctx), true));
  auto passes_of = [&](std::int64_t l) { return &kinds.at(m.layer_kind(l)); };
  if (m.moe) {
    OpContext separate = ctx;
    separate.moe_waves = false;
    out.moe_waves = coster.waves_of(layer_ops(m, m.mtp_layer(), ctx), layer_ops(m, m.mtp_layer(), separate));
  }
  StageCoster::LayerPasses head = coster.passes(head_ops(m, ctx), false);
  StageCoster::LayerPasses mtp_extra = coster.passes(mtp_extra_ops(m, ctx), false);

  const std::vector<StageParams> params = stage_params(job);
  const std::vector<MuonStageCost> muon = muon_stage_costs(job);
  const TrainingSpec& t = job.training;
  const DataParallelGroups dp_groups = coster.data_parallel_groups();
  const DataParallelRates dp_rates{
      .grads = t.optimizer.grads,
      .update_bytes = t.optimizer.grads + 2 * t.optimizer.master + 2 * t.optimizer.moments +
                      t.optimizer.copy_bytes(weight_bytes(t), job.layout.zero),
      .step_passes = t.optimizer.step_passes,
      .stream_rate = job.cluster.gpu.hbm_bandwidth * job.cluster.gpu.hbm_efficiency,
      .microbatches = job.microbatches()};
  const double p2p = coster.p2p();
  const std::vector<StagePlan> plans = stage_plans(job.layout, job.model.mtp_depth);
  // Stages with the same layers in the same order (every middle stage, usually) share their passes.
  std::map<std::vector<const StageCoster::LayerPasses*>, StageCost> built;
  for (const StagePlan& sp : plans) {
    // The forward runs layers first to last; the backward of a stage is assembled in reverse.
    std::vector<const StageCoster::LayerPasses*> order;
    for (std::int64_t l = sp.first_layer; l < sp.first_layer + sp.layers; ++l) order.push_back(passes_of(l));
    for (std::int64_t k = 0; k < sp.mtp_modules; ++k) {
      order.push_back(passes_of(m.mtp_layer()));
      order.push_back(&mtp_extra);
    }
    if (sp.head) order.push_back(&head);
    auto same = built.find(order);
    if (same == built.end()) {
      StageCost passes;
      for (const auto* lp : order) passes.forward.append(lp->forward);
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        passes.input_grad.append((*it)->input_grad);
        passes.weight_grad.append((*it)->weight_grad);
        passes.backward.append((*it)->backward);
      }
      // The GPU's waits on the host, where the framework's host time a kernel outruns the kernels.
      for (Pass* pass : {&passes.forward, &passes.input_grad, &passes.weight_grad, &passes.backward}) pass->settle_host();
      same = built.emplace(order, std::move(passes)).first;
    }
    StageCost s = same->second;
    s.p2p = p2p;
    if (!p.overlap_p2p && s.p2p > 0) add_blocking_sends(s, sp, static_cast<std::int64_t>(p.stage_layers.size()));
    add_data_parallel_terms(s, params[static_cast<std::size_t>(sp.index)], p, dp_groups, dp_rates,
                            muon.empty() ? nullptr : &muon[static_cast<std::size_t>(sp.index)]);
    out.stages.push_back(std::move(s));
  }
  if (schedule_family(p.schedule).overlaps_pairs)
    for (std::int64_t r = 0; r < p.pp; ++r) {
      std::vector<std::int64_t> held = stages_of_rank(p.schedule, r, p.pp, p.vp);
      for (std::size_t i = 0; i < held.size(); ++i) {
        StageCost& f = out.stages[static_cast<std::size_t>(held[i])];
        f.fb_overlap = interleaved_span(f.forward, out.stages[static_cast<std::size_t>(held[held.size() - 1 - i])].backward, out.network);
      }
    }
  return out;
}

OpTimes slowest_stage_op_times(const StepCosts& costs) {
  OpTimes t{0, 0, 0, 0, 0};
  for (const StageCost& c : costs.stages) {
    t.forward = std::max(t.forward, c.forward.span());
    t.input_grad = std::max(t.input_grad, c.input_grad.span());
    t.weight_grad = std::max(t.weight_grad, c.weight_grad.span());
    t.comm = std::max(t.comm, c.p2p);
  }
  t.stash = costs.weight_stash_share;
  return t;
}

PipelineSchedule step_schedule(const ParallelLayout& layout, std::int64_t microbatches, const StepCosts& costs) {
  const ScheduleShape shape{.ranks = layout.pp, .microbatches = microbatches, .vp = layout.vp};
  return schedule_for(layout.schedule, shape, slowest_stage_op_times(costs));
}

}  // namespace plumb
