#pragma once
// How a job is laid out on the cluster: parallel sizes, ZeRO stage, schedule, micro-batching and
// recomputation, plus how the model's layers are split over pipeline stages.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/input/json_reader.hpp"
#include "models/schedules/registry.hpp"

namespace plumb {

struct ModelSpec;
struct Cluster;
struct TrainingSpec;

// Which saved activations are dropped and recomputed in backward.
struct Recompute {
  bool full = false;            // keep only each layer's input (Korthikanti et al. "full")
  bool core_attention = false;  // softmax/dropout of attention (Korthikanti et al. "selective")
  bool norms = false;           // norm outputs (DeepSeek-V3 §3.2.3)
  bool mla_up_proj = false;     // MLA up-projection outputs (DeepSeek-V3 §3.2.3)
  bool activation = false;      // MLP activation-function outputs (SwiGLU/GeLU; DeepSeek-V3 §3.3.3)
  // torchtitan's per-op selective checkpointing ("op"; pytorch/torchtitan parallelize_llama.py): of a
  // Llama block's matmuls in their order wq, wk, wv, wo, w1, w3, w2 the outputs of every second one
  // (wk, wo, w3) are recomputed, the others saved; `matmuls`: every matmul recomputed (float8's
  // _scaled_mm is not in that policy's save list). Both recompute the norms and the activation as well.
  bool alternate_matmuls = false;
  bool matmuls = false;
  std::string label = "none";
};

enum class PipelineSplit { even, balanced, explicit_list };

// How an MoE layer runs its experts: `separate` kernels (dispatch all-to-all, grouped GEMMs, combine),
// overlapped or not by the pipeline schedule; or `waves`, DeepSeek-V4's fine-grained expert parallelism
// (DeepGEMM's MegaMoE): one persistent kernel on all SMs pulling the next wave's tokens and sending the
// last wave's outputs while the current wave's experts compute (models/costs/moe_waves.hpp).
enum class MoeExecution { separate, waves };

// How tensor parallelism's sequence-parallel collectives meet the GEMMs beside them: `none`, each one
// alone on the communication stream between the GEMMs (Megatron-LM without --tp-comm-overlap, PyTorch
// DTensor); `async`, PyTorch's async TP (torchtitan's enable_async_tensor_parallel: Inductor's
// micro-pipeline pass over a compiled model, torch/_inductor/fx_passes/micro_pipeline_tp.py), which
// runs an all-gather with the matmuls that read its output, and a matmul with the reduce-scatter of
// its output, as one op in TP chunks whose peer copies run on the copy engines
// (torch/distributed/_symmetric_memory; models/costs/step_costs.cpp prices it).
enum class TpOverlap { none, async };
// How context parallelism moves the sequence (Megatron-LM's --cp-comm-type): `ring` passes each rank's
// keys and values around the CP group beside attention over its local queries, step by step (p2p,
// Megatron's default; PyTorch's context_parallel); `all_to_all` (Transformer Engine's "a2a", as
// DeepSpeed-Ulysses) exchanges Q, K and V so that each rank holds the whole sequence for heads/cp of the
// heads, runs one attention kernel over every key, and sends the output back; the backward mirrors it
// (TE 2.11 transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py,
// AttnFuncWithCPAndQKVOA2A); `all_gather` gathers every rank's keys and values in one collective at the
// first ring step, which only the first block's attention hides, then runs the other blocks from the
// gathered copy; the backward gathers them again the same way and passes the key and value gradients
// around the ring (PyTorch's context_parallel with its default rotate method, _RotateMethod.ALL_GATHER:
// torch/distributed/tensor/experimental/_attention.py, _AllGatherRotater).
enum class CpComm { ring, all_to_all, all_gather };

// How FSDP2 wraps the parameters outside the transformer blocks under ZeRO-3 (parallel.fsdp_outer_units):
// `none`: gathered per pass like the blocks; `root`: one unit, FSDP2's root module, kept gathered from the
// forward's start to the backward's end (torchtitan until 2025-07); `split`: the embedding a unit of its own,
// resharded after its forward, and the final norm with the head another, kept gathered from its forward to
// its backward (torchtitan 83e6941, 2025-07-28, on).
enum class FsdpOuterUnits { none, root, split };
// The words scenario files (parallel.cp_comm) and plan sections use for them: ring, a2a, all_gather.
const std::vector<std::pair<std::string, CpComm>>& cp_comm_words();
std::string_view cp_comm_name(CpComm c);

struct ParallelLayout {
  std::int64_t tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, etp = 1, vp = 1;
  int zero = 0;
  ScheduleKind schedule = ScheduleKind::one_f_one_b;
  std::int64_t micro_batch = 1;
  Recompute recompute;
  bool sequence_parallel = false;
  // Each sequence-parallel all-gather's output and each reduce-scatter's input is copied once more on
  // the compute stream: PyTorch's functional collectives gather and scatter along dim 0 only, so a
  // tensor sharded along the sequence (dim 1) is put in order by chunk + cat (torchtitan's DTensor
  // sequence parallelism). false: the collectives write and read the layout the GEMMs use (Megatron).
  bool sequence_parallel_copies = false;
  // Under fp8, the sequence-parallel all-gathers move fp8: the column-parallel GEMM's input cast before
  // its forward gather, the row-parallel GEMM's output gradient before its backward one (torchtitan's
  // Float8ColwiseParallel / Float8RowwiseParallel, tensorwise scaling only). The reduce-scatters stay
  // 16-bit. false: every collective moves 16-bit activations.
  bool fp8_all_gathers = false;
  // Under ZeRO-3 with tensorwise fp8, each fp8 linear's weight is cast to fp8 on its shard and gathered in
  // fp8 (torchao's enable_fsdp_float8_all_gather with precompute_float8_dynamic_scale_for_fsdp: one amax
  // pass over the shards and one all-reduce a step set the scales): its gathers move, and its gathered
  // copy holds, one byte a weight, and the GEMMs take it as it is instead of casting their own. Norms,
  // embedding, head and routed experts are gathered in 16 bits as before. false: every weight in 16 bits.
  bool fp8_weight_gathers = false;
  // SMs a communication kernel holds while it runs; compute beside it gets the rest. Default 20, what
  // DeepSeek-V3 gave its all-to-all and PP kernels on a 132-SM H800 (report §3.2.2).
  std::int32_t comm_sms = 20;
  // Pipeline sends overlap compute (Megatron-LM's --overlap-p2p-communication, DualPipe). false: each
  // op waits for its send to finish, as Megatron-LM's blocking send/receive did at SC'21.
  bool overlap_p2p = true;
  // Each stage's gradient reduction starts once its own gradients are done, overlapping the rest of
  // the backward (Megatron-LM's --overlap-grad-reduce, PyTorch DDP buckets). false: every reduction
  // waits for the whole backward, as Megatron-LM did at SC'21.
  bool overlap_grad_reduce = true;
  // The backward of a column-parallel linear overlaps its tensor-parallel traffic with its own GEMMs:
  // under sequence parallelism the input shard it saved is all-gathered again beside the input gradient's
  // GEMM, and the input gradient's reduce-scatter (all-reduce without sequence parallelism) runs beside the
  // weight gradient's GEMM (Megatron-LM's LinearWithGradAccumulationAndAsyncCommunication since 2022,
  // Transformer Engine's Linear and LayerNormLinear). false: the input gradient's collective waits for
  // both GEMMs, and nothing is gathered again (the forward's gathered input is what the backward reads).
  bool tp_backward_overlap = false;
  // ZeRO-3 (FSDP) frees each layer's gathered weights after its forward and gathers them again for the
  // backward (true), or keeps the stage's weights gathered from the first forward to the end of the step
  // and its gradients unsharded until the last micro-batch (false: FSDP2's reshard_after_forward=False,
  // as torchtitan sets under pipeline parallelism): one gather and one reduce-scatter a step, the
  // memory of unsharded 16-bit weights and of unsharded gradients (in the reduce dtype over several
  // micro-batches: models/memory accumulated_grad_bytes).
  bool reshard_after_forward = true;
  // ZeRO-3 (resharded per pass): the units the parameters outside the transformer blocks form (FsdpOuterUnits).
  // A unit's gathered copy stays while FSDP2 keeps it (root: the forward's start to the backward's end;
  // split: the head's from its forward to its backward), and its gather and reduce-scatter buffers join the
  // collectives' stream pools, under pipeline parallelism too.
  FsdpOuterUnits fsdp_outer_units = FsdpOuterUnits::none;
  // Under sequence parallelism a column-parallel linear (qkv, MLP up, the output head) reads the all-gathered
  // whole sequence; true: autograd keeps that gathered input for the weight gradient (DTensor's
  // ColwiseParallel, torchtitan); false: the linear keeps its shard and gathers again in the backward
  // (Megatron-LM's ColumnParallelLinear; Korthikanti et al. §4.2.2).
  bool keep_gathered_inputs = false;
  // Under pipeline parallelism the last stage keeps every micro-batch's output, the logits, until the step
  // ends, to hand them back merged (PyTorch pipelining's output_chunks; torchtitan); false frees each one
  // once its loss is taken (Megatron-LM).
  bool pipeline_keeps_outputs = false;
  // Ring attention's merges under context parallelism (framework profile): after each ring step but the
  // first, the partial attention output is folded into the running one (rescaled by the log-sum-exps),
  // and in the backward each step's query, key and value gradients are added to their accumulators —
  // HBM bytes per element of the local output (forward) and of the q, k and v gradients (backward), on
  // the compute stream; `repeated_kv`: K and V reach the kernel expanded to every query head (torchtitan's
  // repeat_kv), else at the key/value heads. Zero: not priced.
  struct CpMerge {
    double forward = 0, backward = 0;
    bool repeated_kv = false;
  } cp_merge;
  MoeExecution moe_execution = MoeExecution::separate;
  TpOverlap tp_overlap = TpOverlap::none;
  CpComm cp_comm = CpComm::ring;
  std::vector<std::string> order{"tp", "cp", "ep", "dp", "pp"};  // innermost first
  PipelineSplit split = PipelineSplit::even;
  std::vector<std::int64_t> stage_layers;  // transformer layers per stage, filled by finalize_layout

  std::int64_t gpus() const { return tp * cp * pp * dp; }
  std::int64_t edp() const { return tp * cp * dp / (ep * etp); }  // expert data parallel
  // HSDP: ZeRO shards the dense states over `dp_shard` of the DP ranks (times CP) and replicates them over
  // dp / dp_shard such groups; 0: over every DP rank.
  std::int64_t dp_shard = 0;
  std::int64_t dp_shard_size() const { return dp_shard > 0 ? dp_shard : dp; }
  std::int64_t dp_replicas() const { return dp / dp_shard_size(); }
  std::int64_t dense_dp_shards() const { return dp_shard_size() * cp; }  // ZeRO shards dense states over DP×CP
  std::int64_t stages() const { return stage_count(schedule, pp, vp); }
};

// "DP128", or under HSDP "DP128 (HSDP 8×16)": shard groups of 8, 16 replicas.
std::string data_parallel_label(const ParallelLayout& p);

// A recomputation choice: "none", "selective", "full" or a list of what to recompute.
Recompute read_recompute(const Json& value, const std::string& pointer, const SourceFile& src);

// Reads /parallel (its own keys only; cross-field rules are checked by finalize_layout).
ParallelLayout read_parallel(ObjectReader& r);

// Checks every rule that ties the layout to the model, cluster and batch, and fills stage_layers.
// Each violation is a diagnostic at the scenario field it concerns, with the numbers.
void finalize_layout(ParallelLayout& layout, const ModelSpec& model, const Cluster& cluster,
                     const TrainingSpec& training, const SourceFile& src);

// Micro-batches per pipeline per step: global_batch / (micro_batch × dp).
std::int64_t microbatches(const ParallelLayout& layout, const TrainingSpec& training);

// Layers per stage for the "balanced" split: the embedding, the loss/head and each MTP module count
// as one layer (Megatron-LM's --account-for-embedding/loss-in-pipeline-split); leftover slots go to
// the middle stages. Returns an empty vector when some stage would hold a negative number of layers.
std::vector<std::int64_t> balanced_split(std::int64_t layers, std::int64_t mtp_depth, std::int64_t stages);

}  // namespace plumb
