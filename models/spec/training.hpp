#pragma once
// What is trained and how: sequence, batch, precision, optimizer state types, token budget, price.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/input/json_reader.hpp"

namespace plumb {

enum class Precision { bf16, fp16, fp8 };
// flash: fused kernel keeping only its output and log-sum-exp (Dao et al.), at the GPU profile's
// fused-attention rates (its fastest kernel: FlashAttention-3 on Hopper); flash2: the same kind of
// kernel at FlashAttention-2's rates, where the profile gives them (PyTorch's SDPA flash backend, and
// what frameworks ran on Hopper before FlashAttention-3); cudnn: the same kind of kernel at cuDNN's
// fused-attention rates, where the profile gives them (Transformer Engine's FusedAttention, which it
// prefers on Hopper and Blackwell); unfused: softmax probabilities materialised, as in Megatron-LM at
// SC'21 (Korthikanti et al. §4.1).
enum class AttentionKernel { flash, flash2, cudnn, unfused };
inline bool fused_attention(AttentionKernel k) { return k != AttentionKernel::unfused; }
// The words scenario files (training.attention_kernel) and measured runs use for them.
const std::vector<std::pair<std::string, AttentionKernel>>& attention_kernel_words();
std::string_view attention_kernel_name(AttentionKernel k);

// Bytes per parameter of each optimizer-side tensor. The default is the ZeRO paper's mixed-precision
// Adam (Rajbhandari et al. §3.1): 16-bit gradients, fp32 master weights and two fp32 moments (K = 12).
// HBM traffic of an optimizer step besides the update itself, in bytes per parameter, as the framework
// runs it (framework profiles; 0 where not read from its code): over the rank's whole gradient buffer
// (zeroing it, a norm to check it for NaN), the same again where the gradients are reduced over more than
// one rank (scaling them by 1/DP before the reduction), and over the rank's optimizer shard (the gradient
// norm for clipping, the master weights read again to copy them into the 16-bit weights).
struct OptimizerStepPasses {
  double grad_buffer = 0, grad_prescale = 0, shard = 0;
};

struct OptimizerBytes {
  double grads = 2;
  double master = 4;
  double moments = 8;  // both Adam moments together
  // The parameters the optimizer updates are its master weights (PyTorch FSDP under a mixed-precision
  // policy: the sharded parameter stays in its fp32 dtype and each all-gather casts it to 16 bits,
  // torch/distributed/fsdp/_fully_shard/_fsdp_param.py all_gather_inputs): under ZeRO-3 no 16-bit shard is
  // kept beside the master, and the step writes no 16-bit copy.
  bool params_are_master = false;
  OptimizerStepPasses step_passes{};
  double states() const { return master + moments; }
  // What the step writes into the 16-bit weights after updating the master, per parameter.
  double copy_bytes(double weight_bytes, int zero) const { return params_are_master && zero >= 3 ? 0.0 : weight_bytes; }
};

// AdamW everywhere, or Muon on the hidden layers' matrices with AdamW on the rest (embedding, head,
// norms, biases, mHC gates): DeepSeek-V4 technical report §2.4; Muon: Jordan et al. 2024.
enum class OptimizerKind { adamw, muon };
std::string_view optimizer_name(OptimizerKind k);

// Muon as DeepSeek-V4 runs it (report §2.4; ../shared/reference/deepseek-v4.md "Training recipe").
struct MuonSpec {
  // Newton–Schulz iterations per step: 8 with one coefficient set, then 2 with another.
  std::int64_t newton_schulz_steps = 10;
  double momentum_bytes = 4;  // one fp32 momentum buffer per parameter, where Adam keeps two moments
  // ZeRO-1 assigns whole matrices to data-parallel ranks (Newton–Schulz needs the whole matrix): a
  // knapsack with at most this many matrices per rank, every rank's bucket padded to the largest.
  std::int64_t matrices_per_rank = 5;
  // The ZeRO degree for dense matrices is capped; past the cap the update is computed redundantly.
  // The report gives no number: 0 leaves it uncapped (the data-parallel size, or the matrix count).
  std::int64_t dense_zero_cap = 0;
  // Expert gradients stochastically rounded to BF16 and reduced by an all-to-all plus a local FP32 sum
  // instead of a reduce-scatter of `OptimizerBytes::grads`.
  bool bf16_expert_grads = true;
};

// HBM bytes per element of an elementwise op's output, in its forward and in its backward. Of those
// bytes, `unvectorized_*` lists the kernels PyTorch runs on its element-at-a-time paths (bytes per
// element of each): TensorIterator vectorizes a kernel only when every operand is contiguous and of the
// op's dtype (aten/src/ATen/native/cuda/CUDALoops.cuh gpu_kernel_impl: launch_vectorized_kernel;
// otherwise unrolled_elementwise_kernel with casts, or the strided elementwise_kernel for broadcasts and
// copies of non-contiguous views), and such a kernel can be bound by the elements it handles rather
// than by HBM (GpuSpec::unvectorized_elementwise_rate).
struct ElementwiseTraffic {
  double forward = 0, backward = 0;
  std::vector<double> unvectorized_forward{}, unvectorized_backward{};
};

// A framework's elementwise ops as separate eager PyTorch kernels (each op of the module's Python
// forward its own kernel, fp32 upcasts materialised, autograd's backward formulas op by op), where a
// fused kernel (Transformer Engine, a Triton kernel) or torch.compile would run one pass. Per op as
// plumb names them; an op absent here is priced fused. `kv_repeat_copy`: grouped K and V are copied
// out to every query head before attention (a reshape of an expanded tensor), and their gradients
// summed back in backward.
struct EagerElementwise {
  std::optional<ElementwiseTraffic> attention_norm, mlp_norm, final_norm, rope, swiglu, residual;
  // The loss over the logits (per logit): F.cross_entropy on an fp32 upcast, PyTorch's log-softmax and
  // NLL kernels with the casts around them.
  std::optional<ElementwiseTraffic> cross_entropy;
  bool kv_repeat_copy = false;
};

// How fp8 GEMM operands are scaled, and so which cast kernels run around each GEMM: blockwise (DeepSeek-V3
// §3.3.2: 1×128 activation tiles, 128×128 weight blocks kept in fp8, DeepGEMM), or torchao's float8
// recipes with their casts every step, tensorwise (one scale per tensor) or rowwise (one per row).
enum class Fp8Recipe { blockwise, tensorwise, rowwise };
std::string_view fp8_recipe_name(Fp8Recipe r);

struct TrainingSpec {
  std::int64_t seq_len = 0;
  std::int64_t global_batch = 0;  // sequences per optimizer step
  Precision precision = Precision::bf16;
  // What fp8 training caches in fp8 for backward: GEMM inputs (Transformer Engine; DeepSeek-V3
  // §3.3.3) and, as DeepSeek-V3 does, the inputs of the MoE SwiGLU.
  bool fp8_gemm_inputs = false;
  bool fp8_swiglu_inputs = false;
  Fp8Recipe fp8_recipe = Fp8Recipe::blockwise;
  AttentionKernel attention_kernel = AttentionKernel::flash;
  // Where each micro-batch's weight gradients are added to the accumulated ones: in the weight-gradient
  // GEMM's epilogue (D = C + A·B: Megatron-LM's --gradient-accumulation-fusion, apex's
  // fused_weight_gradient_mlp_cuda, in apex from 2022; DeepGEMM's weight-gradient kernels), or, false,
  // by a separate elementwise add after it (PyTorch autograd's accumulation, Megatron-LM's 2021 DDP hook
  // `main_grad.add_(grad)`), which reads the new gradient and reads and writes the accumulator.
  bool fused_grad_accumulation = true;
  // Separate accumulation that skips the step's first micro-batch: PyTorch autograd's AccumulateGrad
  // takes the first gradient into an empty .grad without a kernel (torch/csrc/autograd/functions/
  // accumulate_grad.h: "If the gradient ... is not defined, we steal ... the incoming gradient"), so
  // only the other micro-batches add; Megatron-LM's main_grad buffer, zeroed each step, adds on all.
  bool grad_accumulation_skips_first = false;
  // How the loss is computed over the logits: fused (a vocab-parallel cross-entropy keeping the fp32
  // logits, as Megatron-LM's and Korthikanti et al.'s accounting), or, false, PyTorch's
  // F.cross_entropy on an fp32 upcast of the bf16 logits (torchtitan), whose loss momentarily holds
  // more (models/memory: the loss's transient bytes).
  bool fused_cross_entropy = true;
  // How the model's projections that read one input run: fused (Megatron-LM's linear_qkv and its
  // gate+up linear_fc1, one GEMM each) or, true, as separate linears (torchtitan's Llama: wq, wk, wv
  // and w1, w3 are separate nn.Linear modules), each its own GEMM reading the whole input and, under
  // torchao's float8, casting it to fp8 for itself.
  bool separate_projections = false;
  // The framework's eager elementwise kernels (framework profile) and whether the model is compiled
  // (torch.compile of each block, torchtitan's [training] compile): compiled, Inductor fuses each
  // chain into about one kernel and the eager figures do not apply.
  std::optional<EagerElementwise> eager_elementwise;
  // Ops Inductor leaves as separate kernels under torch.compile, priced by these figures when compiled:
  // a complex multiply (torchtitan's RoPE) has no Inductor code generation and stays an aten kernel
  // between the casts Inductor fuses (torch/_inductor/lowering.py: "Torchinductor does not support
  // code generation for complex operators").
  std::optional<EagerElementwise> compiled_elementwise;
  bool compiled = false;
  // The host's time to issue one of plumb's kernels (an op's pass): the framework's Python, its dispatch
  // and the launch call (training.host_overhead). The GPU waits where the host has not yet issued its
  // next kernel (models/costs Pass::issue_end); 0: the host always keeps ahead.
  double host_overhead = 0;
  // How a grouped (expert) GEMM runs: 0, as one grouped kernel over all its groups' tiles; N, as one dense
  // GEMM a group queued round-robin on N streams, N of them sharing the SMs at a time (Transformer
  // Engine's multi_stream_cublas_gemm on 4 streams: training.grouped_gemm_streams).
  std::int64_t grouped_gemm_streams = 0;
  // The per-op figures that price this run's elementwise ops: the eager ones, or when compiled those of
  // the ops that stay unfused; none when the framework fuses them all.
  const EagerElementwise* eager() const {
    const std::optional<EagerElementwise>& e = compiled ? compiled_elementwise : eager_elementwise;
    return e ? &*e : nullptr;
  }
  // Bytes per routed-expert weight the expert GEMMs read, when narrower than their inputs: "fp4" (E2M1
  // with a UE8M0 scale per 32: 0.5 + 1/32), as DeepSeek-V4's quantization-aware training and DeepGEMM's
  // FP8×FP4 MoE kernels use (report §3.3); 0 reads them at the GEMM's input width. Memory is unchanged
  // (the master weights stay wide).
  double expert_weight_bytes = 0;
  OptimizerBytes optimizer;
  OptimizerKind optimizer_kind = OptimizerKind::adamw;
  MuonSpec muon;
  double tokens = 0;               // training budget
  double price_per_gpu_hour = 0;   // USD
  double reserved_memory = 0;      // bytes per GPU the user sets aside (allocator slack, framework)
  // MoE load on the busiest EP rank over the mean: 1 is balanced routing; a number is a measured
  // max/mean; `sampled_routing` draws top-k routing uniformly at random with `routing_seed` instead.
  // Failures and checkpoints (models/resilience). Defaults from Llama 3 (arXiv 2407.21783 §3.3.4):
  // 419 unexpected interruptions in a 54-day snapshot on 16,384 H100 → 419 / (54 · 24 · 16384) per
  // GPU-hour; Tectonic storage sustaining 2 TB/s. The restart time is an assumption (10 min): the
  // paper gives none, but its > 90% effective training time bounds it.
  double failures_per_gpu_hour = 419.0 / (54.0 * 24.0 * 16384.0);
  double checkpoint_bandwidth = 2e12;  // bytes/s to storage, whole cluster
  double restart_time = 600;           // seconds
  double moe_imbalance = 1.0;
  bool sampled_routing = false;
  std::uint64_t routing_seed = 0;
};

TrainingSpec read_training(ObjectReader& r);
std::string_view precision_name(Precision p);
// Bytes of one weight as kept for compute: 16-bit; under fp8 training DeepSeek-V3's and Transformer
// Engine's blockwise recipe keeps an fp8 cast of the GEMM weights beside it, torchao's recipes do not (they
// cast a temporary per GEMM and save the 16-bit operand for the backward: torchao float8_linear.py,
// matmul_with_hp_or_float8_args, ctx.save_for_backward(input_hp, weight_hp_t)).
double weight_bytes(const TrainingSpec& t);

}  // namespace plumb
