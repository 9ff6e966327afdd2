#pragma once
// The single-GPU validation run (`plumb-validate run`, `plumb compare`): a scenario shrunk to K
// virtual pipeline stages on one GPU — fewer layers, the same shapes — each stage on its own share of
// the SMs, and the kernels that execute it. Pure CPU code: the executor (validate/execute)
// launches what this describes, and `plumb compare` predicts the same shrunk job with plumb's models.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/attention_call.hpp"
#include "kernels/gemm_call.hpp"
#include "models/costs/flops.hpp"
#include "models/scenario/job.hpp"
#include "models/input/json_reader.hpp"
#include "models/schedules/pipeline.hpp"

namespace plumb {

struct VirtualRunOptions {
  std::int64_t stages = 4;            // pipeline ranks (green contexts) on the GPU
  std::int64_t layers_per_stage = 1;  // transformer layers per model stage
  std::int64_t micro_batches = 0;     // 0: twice the pipeline ranks (DualPipe: four times)
  // Which layers to keep: "moe" (the model's MoE layer, as an EP rank of the full layout runs it) or
  // "dense"; "" picks moe for MoE models.
  std::string layer_kind;
  std::int64_t sms_per_stage = 0;  // 0: the GPU's SMs over the stages, rounded down to whole 8-SM groups
  // flash: kernels/flash_attention, priced by the profile's attention efficiencies; unfused: batched
  // GEMMs and a softmax pass, priced by GEMM efficiency and HBM bandwidth.
  AttentionKernel attention = AttentionKernel::flash;
  // The profile describes what one stage runs on (the host backend: a core of its own per rank), not
  // a GPU the stages split: each stage gets the whole profile and sms_per_stage is not used.
  bool stage_per_profile = false;
  // Data-parallel replicas of the shrunk pipeline (the host backend's --mpi --dp): each replica runs
  // the whole schedule and every rank all-reduces its weight gradients with its peers in the others.
  std::int64_t dp = 1;
};

// The shrunk job plumb predicts: one node of `stages` "GPUs", each the full GPU's `sms_per_stage`
// SMs with that share of its dense peak and HBM bandwidth (the bandwidth split evenly is an
// assumption: when fewer stages are busy each could draw more), its GEMM efficiency looked up by work
// per SM; pipeline sends as device copies at
// that share of the copy bandwidth. TP, CP, DP and EP are 1 — a MoE layer keeps the experts one EP
// rank of the full layout holds and the token copies it receives (balanced routing), so the expert
// GEMMs have the full job's shapes and no all-to-all runs. No ZeRO, no MTP, attention as the options
// say, blocking sends (a copy on the sending stage's stream). Throws InputError naming the option
// when the scenario cannot shrink so (or the flash kernel lacks its head widths).
Job virtual_stage_job(const Job& full, const VirtualRunOptions& options);

// One kernel launch of the executor. GEMMs: `batch` independent products C[m×n] = A[m×k]·B[k×n]
// (local experts, attention heads); flash attention one call's forward or backward; memory-bound
// kernels move `bytes` over `rows` × `cols` elements.
enum class KernelKind : std::uint8_t { gemm, attention, rmsnorm, swiglu, permute, unpermute, stream };
struct KernelStep {
  KernelKind kind = KernelKind::stream;
  std::int32_t op = 0;    // index into VirtualRun::op_names: what per-op timings are grouped by
  std::int8_t pass = 0;   // 0 forward (recomputation included), 1 input gradient, 2 weight gradient
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  bool fp8 = false;
  std::int64_t rows = 0, cols = 0;
  double bytes = 0;
  kernels::AttentionCall attention;
  // The model FLOPs plumb counts for it (a flash backward's recomputed scores left out).
  double flops() const;
  kernels::GemmCall gemm() const { return {m, n, k, batch, fp8}; }
};

// One schedule op as the executor enqueues it, with the ops on other ranks it waits for.
struct RunOp {
  std::int32_t rank = 0;
  std::int32_t index = 0;         // position in the rank's schedule
  std::vector<std::int32_t> waits;  // indices into VirtualRun::order of ops on other ranks
  std::int8_t sends = 0;          // copies of its output to a neighbouring stage's rank (F&B: up to 2)
};

struct VirtualRun {
  Job job;  // the shrunk job
  VirtualRunOptions options;
  PipelineSchedule schedule;
  std::vector<std::string> op_names;  // "stage 2 · q up-projection"
  std::vector<LayerOp> op_defs;        // the plumb op each name stands for (its first occurrence)
  // Per model stage, the kernels of each pass kind: forward, full backward, input-gradient half,
  // weight-gradient half.
  std::vector<std::vector<KernelStep>> forward, backward, input_grad, weight_grad;
  std::vector<double> optimizer_bytes;  // per pipeline rank: the memory-bound update over its stages
  std::vector<double> gradient_bytes;   // per pipeline rank: its stages' weight gradients, all-reduced over dp (0: dp 1)
  double send_bytes = 0;                // one micro-batch's activations between stages
  std::vector<RunOp> order;             // every schedule op, each after the ops it waits for
  // Kernels of one schedule op, in launch order.
  std::vector<const KernelStep*> kernels(const PipeOp& op) const;
};

VirtualRun plan_virtual_run(const Job& full, const VirtualRunOptions& options);

// Streaming copies go through buffers of at most this size (ten times a Hopper L2, so every pass
// comes from HBM); a longer copy loops over them (unfused attention's softmax moves tens of GB).
inline constexpr std::size_t kStreamBuffer = std::size_t{512} << 20;
// Bytes a streaming copy reads (and writes) to move `bytes` in all: half, in whole 16-byte words.
std::size_t stream_copy_bytes(double bytes);

// The device buffers one rank's kernels use, in bytes: GEMM operands (bf16 and fp8) and output; two
// activation buffers for the memory-bound kernels, sends and the optimizer pass; norm weights (`cols`
// elements); row statistics and the gather index (`rows`); the inbox a send lands in; flash
// attention's tensors.
struct BufferPlan {
  std::size_t a = 16, b = 16, a8 = 16, b8 = 16, c = 16, x = 16, inbox = 16;
  std::size_t cols = 16, rows = 1;
  kernels::AttentionCall attention{0, 0, 0, 0, true};  // covers every flash call (none: zero heads)
  std::size_t total() const {
    return a + b + a8 + b8 + c + 2 * x + inbox + 2 * cols + 8 * rows + (attention.batch_heads > 0 ? attention.bytes() : 0);
  }
};
BufferPlan plan_buffers(const VirtualRun& run, std::int32_t rank);

// The gather index the permute kernels read, `rows` long: row i reads row (i · 7919) mod rows, a
// scatter over the rows that stays in range.
std::vector<std::int32_t> gather_index(std::size_t rows);

// Every op of the schedule, each after the ops on other ranks it waits for: a forward needs the
// previous stage's forward of its micro-batch; a backward (or its input-gradient half) the next
// stage's backward and its own forward; a weight gradient its own input gradient. Round-robin over
// the ranks, each as far as its next op's waits are met. Throws std::logic_error when an op has no
// producer or the ranks wait on one another in a cycle.
std::vector<RunOp> enqueue_order(const PipelineSchedule& schedule);

// How a measured run file records its setup, and reads it back (InputError on a bad file).
Json virtual_options_json(const VirtualRunOptions& o);
VirtualRunOptions read_virtual_options(const Json& value, const std::string& pointer, const SourceFile& src);

}  // namespace plumb
