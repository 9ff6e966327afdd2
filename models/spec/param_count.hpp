#pragma once
// Exact parameter counts per component, derived from the architecture alone.
// Cross-checked against Megatron-LM Eq. 2 (Narayanan et al., SC'21): P = 12lh²(1 + 13/(12h) + (V+s)/(12lh))
// for GPT, and against published totals (tests/test_models.cpp).
#include <cstdint>
#include <string_view>
#include <vector>

#include "models/spec/model_spec.hpp"

namespace plumb {

// Where a parameter tensor belongs in the layer's accounting.
enum class ParamPart { attention, mlp, norm, router, expert, mixing };  // mixing: mHC's residual-stream weights
// How tensor parallelism splits a tensor: not at all (held whole by every TP rank), along its output
// rows (column-parallel) or along its input columns (row-parallel).
enum class TpSplit { none, rows, cols };

// One parameter tensor of a layer, as [rows = outputs, cols = inputs] (a vector has one row).
struct ParamTensor {
  std::string_view name;
  ParamPart part = ParamPart::attention;
  double rows = 1, cols = 1;
  TpSplit split = TpSplit::none;
  bool adamw_only = false;  // kept on AdamW under Muon (DeepSeek-V4 §2.4: norms, mHC gates and biases)

  double size() const { return rows * cols; }
  // A 2-D weight that Muon orthogonalises (Jordan et al. 2024; DeepSeek-V4 §2.4): matrices of the
  // hidden layers, not vectors and not what stays on AdamW.
  bool muon_matrix() const { return rows > 1 && cols > 1 && !adamw_only; }
};

// Every tensor of layer `layer`; a routed expert's tensors appear once (part `expert`), and
// `layer_params(m, layer).routed_experts` says how many experts hold them.
std::vector<ParamTensor> layer_param_tensors(const ModelSpec& m, std::int64_t layer);

// One transformer layer. "sharded" parts are split across tensor-parallel ranks;
// "replicated" parts are held whole by every TP rank (norms, routers, row-parallel output biases,
// MLA's down-projections).
struct LayerParams {
  double attention_sharded = 0;
  double attention_replicated = 0;
  double mlp_sharded = 0;  // dense MLP, or the shared experts of an MoE layer
  double mlp_replicated = 0;
  double norms = 0;
  double router = 0;
  double mixing = 0;  // mHC: the residual streams' mixing weights, held whole by every TP rank
  double expert = 0;  // one routed expert (split over expert-tensor-parallel ranks)
  std::int64_t routed_experts = 0;

  double dense() const;  // everything but the routed experts
  double total() const { return dense() + expert * static_cast<double>(routed_experts); }
};

struct ParamCounts {
  double embedding = 0;        // token embedding V·h
  double position = 0;         // learned position embedding (0 with RoPE)
  double head = 0;             // LM head V·h (0 when tied)
  double final_norm = 0;       // with mHC, also the head's mixing of the residual streams
  double layers = 0;           // all transformer layers
  double routed_experts = 0;   // part of `layers` held in routed experts
  double mtp = 0;              // multi-token prediction modules (not in `total`, as DeepSeek counts)
  double total = 0;            // embedding + position + layers + final norm + head
  double activated = 0;        // total less the routed experts a token does not use
};

LayerParams layer_params(const ModelSpec& m, std::int64_t layer);
// One MTP module beyond its transformer layer: two input norms, the 2h→h projection, final norm
// (DeepSeek-V3 report §2.2; embedding and head are shared with the main model).
double mtp_module_extra_params(const ModelSpec& m);
// mHC's mixing of the residual streams into the one the final norm and head read (0 without mHC).
double head_mixing_params(const ModelSpec& m);
ParamCounts count_params(const ModelSpec& m);

}  // namespace plumb
