#pragma once
// The tensors each layer saves for its backward pass, per token, and what they cost per rank after
// tensor/sequence/expert sharding, recomputation and fp8 caching. Summed for a GPT layer with
// materialised attention they give Korthikanti et al. (arXiv 2205.05198) Eq. 1–6 exactly:
// sbh(34 + 5as/h) unsharded, sbh(10 + 24/t + 5as/(ht)) with TP, and so on (tests/test_memory.cpp).
#include <cstdint>
#include <string_view>
#include <vector>

#include "models/parallel/layout.hpp"
#include "models/spec/model_spec.hpp"
#include "models/spec/training.hpp"

namespace plumb {

enum class Storage { bf16, gemm_input, swiglu_input, fp32, mask };
// replicated: whole on every TP rank. tp: split over TP. sp: split over TP only with sequence
// parallelism. gathered: a column-parallel linear's input after sequence parallelism's all-gather — split
// like sp where the framework keeps the shard and gathers again in backward (Megatron-LM; Korthikanti et
// al. §4.2.2), whole where autograd keeps the gathered tensor (keep_gathered_inputs: DTensor). routed: a
// routed expert's per-token copy (k per token) — tokens split like sp, routed_ffn additionally split over
// expert-TP.
enum class Shard { replicated, tp, sp, gathered, routed, routed_ffn };
// Which recomputation option drops the tensor (it is rebuilt in backward instead). matmul: the output of
// a matmul torchtitan's per-op policy saves (dropped only when every matmul is recomputed);
// second_matmul: one it recomputes (every second matmul of the block), or a tensor derived from one.
// attention_output: the fused attention's output and log-sum-exp, rebuilt where torchtitan's per-op policies
// (alternate_matmuls, matmuls) recompute the attention: those policies keep only the outputs of the ops they
// save, where Megatron's selective recomputation (core_attention alone) keeps the output of the attention
// it recomputes.
enum class Drop { never, core_attention, norm, mla_up_proj, activation, matmul, second_matmul, attention_output };

struct SavedTensor {
  std::string_view name;
  double width;  // elements per token
  Storage storage;
  Shard shard;
  Drop drop;
};

struct ActivationSettings {
  std::int64_t tp = 1;
  std::int64_t etp = 1;
  bool sequence_parallel = false;
  Recompute recompute;
  bool fp8_gemm_inputs = false;
  bool fp8_swiglu_inputs = false;
  AttentionKernel kernel = AttentionKernel::flash;
  std::int64_t seq_local = 1;  // sequence length per rank after context parallelism
  bool compiled = false;       // torch.compile'd blocks: the partitioner saves what the backward reads
  bool keep_gathered_inputs = false;  // ParallelLayout::keep_gathered_inputs

  static ActivationSettings of(const ParallelLayout& layout, const TrainingSpec& training);
};

// Tensors kept by transformer layer `layer` (attention block, then MLP or MoE block).
std::vector<SavedTensor> layer_tensors(const ModelSpec& m, std::int64_t layer, const ActivationSettings& s);
// Tensors kept by the stage ends: embedding output extras, final norm + LM head + loss, and one
// MTP module's own tensors (its transformer layer is counted with layer_tensors).
std::vector<SavedTensor> embedding_tensors(const ModelSpec& m);
std::vector<SavedTensor> head_tensors(const ModelSpec& m);
std::vector<SavedTensor> mtp_extra_tensors(const ModelSpec& m);

// What layer `layer`'s weight gradients read, held from its input-gradient backward (B) to its W where a
// schedule runs the two apart (zero-bubble schedules, DualPipe): every weight GEMM's input (whatever
// recomputation dropped, B has rebuilt by then) and its output's gradient, each as the GEMM reads it (16
// bits, or fp8 where GEMM inputs are cached in fp8). For a 16-bit GPT layer
// this is 32 bytes per token and unit of h, Qi et al. 2024 (arXiv 2401.10241) Table 1's 32sbh.
std::vector<SavedTensor> weight_gradient_tensors(const ModelSpec& m, std::int64_t layer, const ActivationSettings& s);

// Bytes per token on one rank of the given tensors after sharding, recomputation and fp8 caching.
double bytes_per_token(const std::vector<SavedTensor>& tensors, const ActivationSettings& s);
// One transformer layer's saved bytes per token on one rank (full recomputation keeps the input only).
double layer_bytes_per_token(const ModelSpec& m, std::int64_t layer, const ActivationSettings& s);

}  // namespace plumb
