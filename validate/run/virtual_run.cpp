#include "validate/run/virtual_run.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <tuple>

#include "models/input/diagnostics.hpp"
#include "models/costs/flops.hpp"
#include "models/memory/memory.hpp"
#include "models/costs/op_cost.hpp"
#include "models/parallel/placement.hpp"
#include "models/costs/step_costs.hpp"

namespace plumb {
namespace {

constexpr const char* kSource = "plumb-validate run";

std::int64_t default_micro_batches(const VirtualRunOptions& o) { return o.micro_batches > 0 ? o.micro_batches : 2 * o.stages; }

// Green contexts hand out SMs in groups (8 on Hopper); the default leaves the remainder idle.
std::int64_t default_sms(const VirtualRunOptions& o, std::int64_t gpu_sms) {
  if (o.sms_per_stage > 0) return o.sms_per_stage;
  return std::max<std::int64_t>(1, gpu_sms / o.stages / 8 * 8);
}

// The model one GPU of the full layout runs, with TP's sharding kept as narrower shapes.
void keep_tp_shapes(ModelSpec& m, std::int64_t tp) {
  if (tp == 1) return;
  m.attention.heads /= tp;
  m.attention.kv_heads = std::max<std::int64_t>(1, m.attention.kv_heads / tp);
  m.mlp.ffn_hidden /= tp;
  m.vocab /= tp;
  if (m.moe) m.moe->shared_expert_ffn_hidden /= tp;
}

}  // namespace

Job virtual_stage_job(const Job& full, const VirtualRunOptions& o) {
  Diagnostics d;
  SourceFile src{kSource, {}, &d, {}};
  const ParallelLayout& fp = full.layout;
  if (o.stages < 1) src.error("--stages", "give at least one stage");
  if (o.layers_per_stage < 1) src.error("--layers-per-stage", "give at least one layer per stage");
  if (fp.cp > 1) src.error("/parallel/cp", "context parallelism is not emulated on one GPU; run with --set parallel.cp=1");
  std::string kind = o.layer_kind.empty() ? (full.model.moe ? "moe" : "dense") : o.layer_kind;
  if (kind != "moe" && kind != "dense") src.error("--layer-kind", fmt::format("\"{}\" is not moe or dense", kind));
  if (kind == "moe" && !full.model.moe) src.error("--layer-kind", fmt::format("{} has no MoE layers; use dense", full.model.name));
  const std::int64_t gpu_sms = full.cluster.gpu.sms;
  const std::int64_t sms = o.stage_per_profile ? gpu_sms : o.stages >= 1 ? default_sms(o, gpu_sms) : 1;
  if (!o.stage_per_profile && o.stages >= 1 && sms * o.stages > gpu_sms)
    src.error("--sms-per-stage", fmt::format("{} stages of {} SMs need {} SMs; the {} has {}", o.stages, sms, sms * o.stages,
                                             full.cluster.gpu.name, gpu_sms));
  d.throw_if_any();

  Job job = full;
  job.name = fmt::format("{} — {} virtual stages on one {}", full.name, o.stages, full.cluster.gpu.name);
  ParallelLayout& p = job.layout;
  const std::int64_t tp = fp.tp, ep = fp.ep;
  p.tp = p.cp = p.ep = p.etp = 1;
  p.dp = o.dp;
  p.overlap_grad_reduce = false;  // the executor all-reduces a rank's gradients after its last op
  p.pp = o.stages;
  p.zero = 0;
  p.sequence_parallel = false;
  p.overlap_p2p = false;  // the send is a copy on the sending stage's own stream
  p.comm_sms = 1;         // no communication kernels run beside compute
  p.split = PipelineSplit::even;
  p.stage_layers.clear();
  if (!schedule_family(p.schedule).interleaves) p.vp = 1;

  ModelSpec& m = job.model;
  keep_tp_shapes(m, tp);
  m.mtp_depth = 0;
  m.layers = stage_count(p.schedule, p.pp, p.vp) * o.layers_per_stage;
  if (m.moe) {
    // One EP rank's experts; balanced routing still brings it top_k copies of every local token.
    m.moe->experts = std::max<std::int64_t>(1, m.moe->experts / ep);
    m.moe->expert_ffn_hidden /= fp.etp;
    m.moe->first_dense_layers = kind == "moe" ? 0 : m.layers;
  }
  job.training.global_batch = default_micro_batches(o) * p.micro_batch * o.dp;
  job.training.attention_kernel = o.attention;
  if (o.attention != AttentionKernel::flash && fused_attention(o.attention))
    src.error("--attention", fmt::format("the validation run executes plumb's own attention kernels, flash or unfused, not {}'s: "
                                         "use --attention flash", attention_kernel_name(o.attention)));
  if (p.recompute.alternate_matmuls || p.recompute.matmuls)
    src.error("/parallel/recompute", "the validation run does not execute torchtitan's per-op recomputation "
                                     "(alternate_matmuls, matmuls) yet; use a list of whole ops or \"full\"");
  if (fused_attention(o.attention)) {
    const AttentionSpec& a = m.attention;
    if (!kernels::AttentionCall::supported_widths(a.qk_head_dim(), a.out_head_dim()) || job.training.seq_len % kernels::kAttentionTile != 0)
      src.error("--attention", fmt::format("the flash kernel takes head widths {} and sequences of whole {}-token tiles, not ({}, {}) "
                                           "over {} tokens; use --attention unfused",
                                           kernels::AttentionCall::kWidths, kernels::kAttentionTile, a.qk_head_dim(), a.out_head_dim(),
                                           job.training.seq_len));
  }

  GpuSpec& g = job.cluster.gpu;
  const double share = static_cast<double>(sms) / static_cast<double>(gpu_sms);
  g.name = fmt::format("{} ({} of {} SMs)", full.cluster.gpu.name, sms, gpu_sms);
  g.sms = sms;
  g.efficiency_sms = full.cluster.gpu.efficiency_sms > 0 ? full.cluster.gpu.efficiency_sms : gpu_sms;
  for (auto& [dtype, rate] : g.peak_dense) rate *= share;
  g.hbm_bandwidth *= share;
  if (!o.stage_per_profile) g.hbm_capacity /= static_cast<double>(o.stages);
  // A device copy reads and writes every byte: half the streaming bandwidth moves the payload.
  g.nvlink_bandwidth_per_direction = g.hbm_bandwidth * g.hbm_efficiency / 2;
  FabricSpec& f = job.cluster.fabric;
  f = FabricSpec{};
  f.id = f.name = "one GPU's virtual stages (device copies)";
  f.gpus_per_node = o.stages * o.dp;
  f.nvlink_effective_per_gpu = g.nvlink_bandwidth_per_direction;
  f.nics_per_node = 1;
  f.nic_rate = f.nvlink_effective_per_gpu.value();
  job.cluster.nodes = 1;
  g.slowest_chip_scale = 1.0;  // one chip runs every virtual stage

  finalize_layout(p, m, job.cluster, job.training, src);
  std::string why;
  if (d.empty() && !Placement::make(p, f.gpus_per_node, &why)) src.error("/parallel", why);
  d.throw_if_any();
  return job;
}

double KernelStep::flops() const {
  if (kind == KernelKind::attention) {
    const FlashAttentionFlops f = flash_attention_flops(static_cast<double>(attention.batch_heads * attention.seq), static_cast<double>(attention.seq),
                                                        static_cast<double>(attention.d_qk), static_cast<double>(attention.d_v), attention.causal);
    return pass == 0 ? f.forward : f.backward;
  }
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(batch);
}

std::vector<const KernelStep*> VirtualRun::kernels(const PipeOp& op) const {
  std::vector<const KernelStep*> out;
  auto add = [&](const std::vector<std::vector<KernelStep>>& pass, std::int32_t stage) {
    for (const KernelStep& k : pass[static_cast<std::size_t>(stage)]) out.push_back(&k);
  };
  switch (op.kind) {
    case OpKind::forward: add(forward, op.work.stage); break;
    case OpKind::backward: add(backward, op.work.stage); break;
    case OpKind::backward_input: add(input_grad, op.work.stage); break;
    case OpKind::weight: add(weight_grad, op.work.stage); break;
    case OpKind::forward_backward:
      add(forward, op.work.stage);
      add(backward, op.other.stage);
      break;
  }
  return out;
}

namespace {

// The kernels of one op's pass, as the executor runs it.
struct KernelMapper {
  const Job& job;

  void map(const LayerOp& op, int pass, std::int32_t id, std::vector<KernelStep>& out) const {
    const auto p = static_cast<std::size_t>(pass);
    if (op.flops[p] <= 0 && op.bytes[p] <= 0) return;
    KernelStep k;
    k.op = id;
    k.pass = static_cast<std::int8_t>(pass);
    if (op.cls == OpClass::gemm) {
      GemmShape g = gemm_shape(op, pass);
      k.kind = KernelKind::gemm;
      k.batch = std::llround(g.groups);  // a rank's experts: one GEMM each over its own rows
      k.m = std::llround(g.m);
      k.n = std::llround(g.n);
      k.k = std::llround(g.k);
      k.fp8 = job.training.precision == Precision::fp8 && !op.high_precision && job.cluster.gpu.peak_dense.count(MathDtype::fp8);
      out.push_back(k);
      return;
    }
    if (op.cls == OpClass::attention) {
      attention(pass, id, out);
      return;
    }
    k.bytes = op.bytes[p];
    const double h = static_cast<double>(job.model.hidden);
    if (op.name.ends_with("norm") && pass < 2) {
      k.kind = KernelKind::rmsnorm;
      k.cols = job.model.hidden;
      k.rows = std::llround(op.bytes[0] / (2 * h * 2));  // forward reads and writes rows × h in 16 bits
    } else if (op.name.ends_with("SwiGLU")) {
      k.kind = KernelKind::swiglu;
      k.cols = ffn_width(op.name);
      k.rows = std::llround(op.bytes[0] / (3.0 * static_cast<double>(k.cols) * 2));  // reads 2f, writes f, 16 bits
    } else if (op.name.rfind("permute", 0) == 0 || op.name.rfind("unpermute", 0) == 0) {
      k.kind = op.name.rfind("permute", 0) == 0 ? KernelKind::permute : KernelKind::unpermute;
      if (pass == 1) k.kind = k.kind == KernelKind::permute ? KernelKind::unpermute : KernelKind::permute;  // gradients flow back
      k.cols = job.model.hidden;
      k.rows = std::llround(op.bytes[0] / (2 * h * 2));
    } else {
      k.kind = KernelKind::stream;
    }
    out.push_back(k);
  }

  // The SwiGLU's output width: TP and ETP are already folded into the shrunk model's shapes.
  std::int64_t ffn_width(const std::string& name) const {
    const ModelSpec& m = job.model;
    if (name.rfind(kExpertPrefix, 0) == 0) return m.moe->expert_ffn_hidden;
    if (name.rfind("shared expert: ", 0) == 0) return m.moe->shared_experts * m.moe->shared_expert_ffn_hidden;
    return m.mlp.ffn_hidden;
  }

  // Flash: one kernel per pass over every (sequence, head) of the micro-batch, causal. Unfused:
  // batched GEMMs per (sequence, head): forward S = Q·Kᵀ and O = P·V; backward dP = dO·Vᵀ,
  // dV = Pᵀ·dO, dQ = dS·K, dK = dSᵀ·Q — twice the forward FLOPs, as plumb costs it.
  void attention(int pass, std::int32_t id, std::vector<KernelStep>& out) const {
    if (pass == 2) return;
    const AttentionSpec& a = job.model.attention;
    const std::int64_t s = job.training.seq_len, dqk = a.qk_head_dim(), dv = a.out_head_dim();
    const std::int64_t batch = job.layout.micro_batch * a.heads;
    if (fused_attention(job.training.attention_kernel)) {
      KernelStep f;
      f.kind = KernelKind::attention;
      f.op = id;
      f.pass = static_cast<std::int8_t>(pass);
      f.attention = {batch, s, dqk, dv, true};
      out.push_back(f);
      return;
    }
    auto gemm = [&](std::int64_t m, std::int64_t n, std::int64_t k) {
      KernelStep g;
      g.kind = KernelKind::gemm;
      g.op = id;
      g.pass = static_cast<std::int8_t>(pass);
      g.m = m;
      g.n = n;
      g.k = k;
      g.batch = batch;
      out.push_back(g);
    };
    if (pass == 0) {
      gemm(s, s, dqk);
      gemm(s, dv, s);
    } else {
      gemm(s, s, dv);
      gemm(s, dv, s);
      gemm(s, dqk, s);
      gemm(s, dqk, s);
    }
  }
};

// The ops of one model stage, layer by layer: (ops, is a transformer layer).
std::vector<std::pair<std::vector<LayerOp>, bool>> stage_layers_ops(const ModelSpec& model, const StagePlan& s, const OpContext& c) {
  std::vector<std::pair<std::vector<LayerOp>, bool>> out;
  for (std::int64_t l = s.first_layer; l < s.first_layer + s.layers; ++l) out.emplace_back(layer_ops(model, l, c), true);
  if (s.head) out.emplace_back(head_ops(model, c), false);
  return out;
}

// Index of each schedule op by what it produces: (0 forward / 1 backward-input, stage, micro-batch).
using Produced = std::map<std::tuple<int, std::int32_t, std::int32_t>, std::int32_t>;

}  // namespace

VirtualRun plan_virtual_run(const Job& full, const VirtualRunOptions& options) {
  VirtualRun run;
  run.options = options;
  run.job = virtual_stage_job(full, options);
  const Job& job = run.job;
  const ParallelLayout& p = job.layout;
  // The schedule the simulated step runs for this job (ordered for its own op times), so that the
  // measured run and plumb's prediction of it execute the same op order.
  const StepCosts costs = step_costs(job);
  run.schedule = step_schedule(p, job.microbatches(), costs);
  const OpContext ctx = op_context(job.layout, job.training, job.cluster.gpu);
  KernelMapper mapper{job};

  std::map<std::string, std::int32_t> ids;
  const std::vector<StagePlan> plans = stage_plans(job.layout, job.model.mtp_depth);
  for (auto* pass : {&run.forward, &run.backward, &run.input_grad, &run.weight_grad}) pass->resize(plans.size());
  for (const StagePlan& s : plans) {
    const auto si = static_cast<std::size_t>(s.index);
    auto layers = stage_layers_ops(job.model, s, ctx);
    auto id_of = [&](const LayerOp& op) {
      std::string name = fmt::format("stage {} · {}", s.index, op.name);
      auto [it, added] = ids.emplace(name, static_cast<std::int32_t>(run.op_names.size()));
      if (added) {
        run.op_names.push_back(name);
        run.op_defs.push_back(op);
      }
      return it->second;
    };
    for (const auto& [ops, transformer] : layers)
      for (const LayerOp& op : ops) mapper.map(op, 0, id_of(op), run.forward[si]);
    for (auto layer = layers.rbegin(); layer != layers.rend(); ++layer) {
      const auto& [ops, transformer] = *layer;
      std::vector<KernelStep> recompute;
      for (const LayerOp& op : ops)
        if ((p.recompute.full && transformer) || recomputed(op, p.recompute)) mapper.map(op, 0, id_of(op), recompute);
      for (auto* pass : {&run.backward[si], &run.input_grad[si]}) pass->insert(pass->end(), recompute.begin(), recompute.end());
      for (auto op = ops.rbegin(); op != ops.rend(); ++op) {
        mapper.map(*op, 1, id_of(*op), run.input_grad[si]);
        mapper.map(*op, 1, id_of(*op), run.backward[si]);
        mapper.map(*op, 2, id_of(*op), run.backward[si]);
      }
      for (const LayerOp& op : ops) mapper.map(op, 2, id_of(op), run.weight_grad[si]);
    }
  }

  // The optimizer's bytes: plumb costs the update as a memory-bound pass at the streaming bandwidth.
  const double stream_rate = job.cluster.gpu.hbm_bandwidth * job.cluster.gpu.hbm_efficiency;
  run.optimizer_bytes.assign(static_cast<std::size_t>(p.pp), 0.0);
  for (std::int64_t r = 0; r < p.pp; ++r)
    for (std::int64_t s : stages_of_rank(p.schedule, r, p.pp, p.vp))
      run.optimizer_bytes[static_cast<std::size_t>(r)] += costs.stages[static_cast<std::size_t>(s)].optimizer * stream_rate;
  run.send_bytes = ctx.tokens * static_cast<double>(job.model.hidden) * 2.0;
  // The weight gradients each rank all-reduces over the replicas: its stages' parameters at the
  // gradients' bytes (the reduction plumb costs as the stage's grad_sync).
  run.gradient_bytes.assign(static_cast<std::size_t>(p.pp), 0.0);
  if (p.dp > 1) {
    const std::vector<StageParams> params = stage_params(job);
    for (std::int64_t r = 0; r < p.pp; ++r)
      for (std::int64_t s : stages_of_rank(p.schedule, r, p.pp, p.vp))
        run.gradient_bytes[static_cast<std::size_t>(r)] +=
            (params[static_cast<std::size_t>(s)].dense + params[static_cast<std::size_t>(s)].expert) * job.training.optimizer.grads;
  }

  run.order = enqueue_order(run.schedule);
  return run;
}

std::vector<std::int32_t> gather_index(std::size_t rows) {
  std::vector<std::int32_t> index(rows);
  for (std::size_t i = 0; i < rows; ++i) index[i] = static_cast<std::int32_t>((i * 7919u) % rows);
  return index;
}

std::vector<RunOp> enqueue_order(const PipelineSchedule& schedule) {
  // Only waits on other ranks are listed: a rank's own order is its stream's.
  const auto stages = static_cast<std::int32_t>(schedule.stages);
  std::vector<RunOp> order;
  Produced produced;
  std::vector<std::vector<std::int32_t>> id(schedule.ops.size());
  std::vector<RunOp> all;
  for (std::size_t r = 0; r < schedule.ops.size(); ++r)
    for (std::size_t i = 0; i < schedule.ops[r].size(); ++i) {
      const PipeOp& op = schedule.ops[r][i];
      auto gid = static_cast<std::int32_t>(all.size());
      id[r].push_back(gid);
      all.push_back({static_cast<std::int32_t>(r), static_cast<std::int32_t>(i), {}, 0});
      if (op.kind == OpKind::forward || op.kind == OpKind::forward_backward) produced[{0, op.work.stage, op.work.mb}] = gid;
      if (op.kind == OpKind::backward || op.kind == OpKind::backward_input) produced[{1, op.work.stage, op.work.mb}] = gid;
      if (op.kind == OpKind::forward_backward) produced[{1, op.other.stage, op.other.mb}] = gid;
    }
  auto need = [&](RunOp& op, int what, std::int32_t stage, std::int32_t mb) {
    auto it = produced.find({what, stage, mb});
    if (it == produced.end()) throw std::logic_error(fmt::format("schedule has no producer for stage {} micro-batch {}", stage, mb));
    if (all[static_cast<std::size_t>(it->second)].rank != op.rank) op.waits.push_back(it->second);
  };
  for (RunOp& ro : all) {
    const PipeOp& op = schedule.ops[static_cast<std::size_t>(ro.rank)][static_cast<std::size_t>(ro.index)];
    auto forward_needs = [&](StageWork w) {
      if (w.stage > 0) need(ro, 0, w.stage - 1, w.mb);
      ro.sends = static_cast<std::int8_t>(ro.sends + (w.stage + 1 < stages ? 1 : 0));
    };
    auto backward_needs = [&](StageWork w) {
      need(ro, 0, w.stage, w.mb);
      if (w.stage + 1 < stages) need(ro, 1, w.stage + 1, w.mb);
      ro.sends = static_cast<std::int8_t>(ro.sends + (w.stage > 0 ? 1 : 0));
    };
    switch (op.kind) {
      case OpKind::forward: forward_needs(op.work); break;
      case OpKind::backward:
      case OpKind::backward_input: backward_needs(op.work); break;
      case OpKind::weight: need(ro, 1, op.work.stage, op.work.mb); break;
      case OpKind::forward_backward:
        forward_needs(op.work);
        backward_needs(op.other);
        break;
    }
  }
  // Enqueue order: round-robin over ranks, each as far as its next op's waits are already enqueued.
  std::vector<std::size_t> next(schedule.ops.size(), 0);
  std::vector<std::int32_t> position(all.size(), -1);
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t r = 0; r < next.size(); ++r)
      while (next[r] < id[r].size()) {
        RunOp& op = all[static_cast<std::size_t>(id[r][next[r]])];
        if (!std::all_of(op.waits.begin(), op.waits.end(), [&](std::int32_t w) { return position[static_cast<std::size_t>(w)] >= 0; })) break;
        position[static_cast<std::size_t>(id[r][next[r]])] = static_cast<std::int32_t>(order.size());
        order.push_back(op);
        ++next[r];
        progress = true;
      }
  }
  if (order.size() != all.size()) throw std::logic_error("the schedule's ops wait on one another in a cycle");
  for (RunOp& op : order)
    for (std::int32_t& w : op.waits) w = position[static_cast<std::size_t>(w)];
  return order;
}

std::size_t stream_copy_bytes(double bytes) { return static_cast<std::size_t>(std::max(16.0, bytes / 2)) / 16 * 16; }

BufferPlan plan_buffers(const VirtualRun& run, std::int32_t rank) {
  BufferPlan z;
  auto streamed = [&](double bytes) { z.x = std::max(z.x, std::min(stream_copy_bytes(bytes), kStreamBuffer)); };
  for (const RunOp& op : run.order) {
    if (op.rank != rank) continue;
    const PipeOp& p = run.schedule.ops[static_cast<std::size_t>(rank)][static_cast<std::size_t>(op.index)];
    for (const KernelStep* k : run.kernels(p)) {
      if (k->kind == KernelKind::gemm) {
        const kernels::GemmCall g = k->gemm();
        (k->fp8 ? z.a8 : z.a) = std::max(k->fp8 ? z.a8 : z.a, g.a_bytes());
        (k->fp8 ? z.b8 : z.b) = std::max(k->fp8 ? z.b8 : z.b, g.b_bytes());
        z.c = std::max(z.c, g.c_bytes());
      } else if (k->kind == KernelKind::attention) {
        kernels::AttentionCall& most = z.attention;
        most = {std::max(most.batch_heads, k->attention.batch_heads), std::max(most.seq, k->attention.seq),
                std::max(most.d_qk, k->attention.d_qk), std::max(most.d_v, k->attention.d_v), true};
      } else if (k->kind == KernelKind::stream) {
        streamed(k->bytes);
      } else {
        // RMSNorm reads rows × cols, SwiGLU its gate and up halves (2 × cols), gathers rows × cols.
        z.x = std::max(z.x, static_cast<std::size_t>(k->rows * k->cols * 2 * (k->kind == KernelKind::swiglu ? 2 : 1)));
        z.cols = std::max(z.cols, static_cast<std::size_t>(k->cols));
        z.rows = std::max(z.rows, static_cast<std::size_t>(k->rows));
      }
    }
  }
  streamed(2.0 * run.send_bytes);  // a send copies its payload once
  streamed(run.optimizer_bytes[static_cast<std::size_t>(rank)]);
  z.inbox = std::min(stream_copy_bytes(2.0 * run.send_bytes), kStreamBuffer);
  return z;
}

Json virtual_options_json(const VirtualRunOptions& o) {
  Json j{{"stages", o.stages},
         {"layers_per_stage", o.layers_per_stage},
         {"micro_batches", o.micro_batches},
         {"layer_kind", o.layer_kind},
         {"sms_per_stage", o.sms_per_stage},
         {"attention", attention_kernel_name(o.attention)}};
  if (o.stage_per_profile) j["stage_per_profile"] = true;
  if (o.dp > 1) j["dp"] = o.dp;
  return j;
}

VirtualRunOptions read_virtual_options(const Json& value, const std::string& pointer, const SourceFile& src) {
  VirtualRunOptions o;
  ObjectReader r(value, pointer, src);
  o.stages = r.integer("stages", Need::required, 1, 1024).value_or(o.stages);
  o.layers_per_stage = r.integer("layers_per_stage", Need::required, 1, 1024).value_or(o.layers_per_stage);
  o.micro_batches = r.integer("micro_batches", Need::optional, 0, 1 << 20).value_or(0);
  o.layer_kind = r.string("layer_kind", Need::optional).value_or("");
  o.sms_per_stage = r.integer("sms_per_stage", Need::optional, 0, 100'000).value_or(0);
  o.attention = r.choice<AttentionKernel>("attention", Need::optional, attention_kernel_words()).value_or(o.attention);
  o.stage_per_profile = r.boolean("stage_per_profile", Need::optional).value_or(false);
  o.dp = r.integer("dp", Need::optional, 1, 1024).value_or(1);
  r.finish();
  return o;
}

}  // namespace plumb
