#pragma once
// GPU and fabric profiles (hw_profiles/) and the cluster a scenario runs on.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/input/json_reader.hpp"

namespace plumb {

enum class MathDtype { fp32, tf32, bf16, fp8 };

// GEMM efficiency by shape, fitted to measured GEMMs. The output is cut into tile_m × tile_n tiles;
// each tile runs its K steps plus a fixed `k_overhead` more (prologue, epilogue, filling the
// pipeline), and the tiles run in waves over the SMs. Partial tiles at the edges compute in full, a
// last wave that leaves SMs idle costs a whole wave, and a GEMM with fewer tiles than SMs splits K
// to fill them (split-K). `ceiling` is the share of the dense peak a tile reaches in the limit of
// long K: efficiency = ceiling · K/(K + k_overhead) · (useful tile area) · (busy share of the waves).
struct GemmShapeModel {
  double ceiling = 1.0;
  double k_overhead = 0;
  std::int64_t tile_m = 128, tile_n = 128;
  // The kernel puts the weights on the tile's long side and the tokens on the short one when that wastes
  // less of the tile (swap A/B: DeepGEMM's SM100 MoE kernels, whose 256-wide MMA side is the weights').
  bool swap_ab = false;
  // How `groups` GEMMs of m × n × k each (a grouped expert GEMM) tile `sms` SMs: the K steps each tile
  // runs (after split-K) and the share of the SMs' tile time that is useful work.
  struct Tiling {
    double k_steps = 0, busy = 1;
  };
  Tiling tiling(double m, double n, double k, double groups, std::int64_t sms) const;
  double efficiency(double m, double n, double k, double groups, std::int64_t sms) const;
};

// "9.0", "10.0": a CUDA compute capability as NVIDIA writes it (major.minor).
bool is_compute_capability(std::string_view s);

struct GpuSpec {
  std::string id;    // catalogue name ("h800-sxm") or file path
  std::string name;  // "NVIDIA H800 SXM5 80GB"
  // Its CUDA compute capability ("9.0"), which frameworks pick kernels by; empty where the profile
  // gives none.
  std::string compute_capability;
  std::int64_t sms = 0;
  double hbm_capacity = 0;   // bytes
  double hbm_bandwidth = 0;  // bytes/s
  double hbm_efficiency = 1.0;  // share of hbm_bandwidth a streaming (elementwise) kernel reaches
  // Seconds a streaming kernel takes to move `bytes` through HBM (reads and writes counted).
  double hbm_seconds(double bytes) const { return bytes / (hbm_bandwidth * hbm_efficiency); }
  std::map<MathDtype, double> peak_dense;  // FLOP/s; a dtype the GPU lacks is absent
  double nvlink_bandwidth_per_direction = 0;  // bytes/s per GPU
  double cuda_context = 0;                    // bytes taken before the first allocation
  double cublas_workspace = 0;                // bytes of GEMM workspace per compute stream
  // Share of the dense peak a GEMM reaches, by size: rows of (from this many FLOPs, efficiency),
  // rising in FLOPs. Profiles ship the measured large-GEMM ceiling; calibration adds rows.
  std::vector<std::pair<double, double>> gemm_efficiency;
  // The same for fp8 GEMMs (with their scaling) against the fp8 peak; absent: `gemm_efficiency`.
  std::vector<std::pair<double, double>> gemm_efficiency_fp8;
  // SMs the efficiency tables were measured with (0: all of this GPU's). On a share of a GPU (a green
  // context) a GEMM of F FLOPs gives each SM the work F × efficiency_sms / sms gives it on the whole
  // GPU, and fills its waves as well: the lookup scales F so.
  std::int64_t efficiency_sms = 0;
  // 1 when the profile has no table for the dtype.
  double gemm_efficiency_at(double flops, MathDtype dtype = MathDtype::bf16) const;
  // By shape, per dtype; where the profile has one it prices every GEMM whose shape is known (the
  // tables stay for those whose shape is not: unfused attention's batched GEMMs).
  std::map<MathDtype, GemmShapeModel> gemm_model;
  // Where the weight gradient runs another kernel (gemm_model.<dtype>.weight_gradient): its model.
  std::map<MathDtype, GemmShapeModel> gemm_model_weight_gradient;
  // Where grouped (expert) GEMMs run another kernel (gemm_model.<dtype>.grouped, and its own
  // weight_gradient): their models. Absent: the dense models price them, tiling all groups at once.
  std::map<MathDtype, GemmShapeModel> gemm_model_grouped, gemm_model_grouped_weight_gradient;
  // The shape model that prices `groups` GEMMs of the dtype in a pass (the grouped kernel's for
  // groups > 1 and the weight-gradient one for that pass, where the profile has them); none: the table.
  const GemmShapeModel* gemm_model_for(MathDtype dtype, double groups, bool weight_gradient) const;
  // The shape model's efficiency where the dtype has one, else the table's for the GEMMs' FLOPs.
  double gemm_efficiency_of(double m, double n, double k, double groups, MathDtype dtype, bool weight_gradient = false) const;
  // `concurrent` dense GEMMs of one shape, each its own kernel, sharing the SMs at once (a grouped GEMM's
  // groups queued on several streams): the dense kernel's model over their tiles together, never a grouped
  // kernel's.
  double concurrent_gemms_efficiency(double m, double n, double k, double concurrent, MathDtype dtype, bool weight_gradient) const;
  // Seconds each kernel adds on a busy stream beyond its work (launch and ramp): measured by
  // plumb-validate bench (back-to-back empty kernels) and set by plumb calibrate; absent: 0.
  double kernel_overhead = 0;
  // Tensor-core throughput sustained through a training step over the rates the efficiencies above
  // were measured at (microbenchmarks: short kernels, idle gaps, boost clocks): below 1 where the GPU
  // lowers its clocks under continuous load at its power limit. Scales GEMM time, and attention's where
  // the profile has no sustained_attention_scale.
  double sustained_compute_scale = 1.0;
  // The same for FP8 tensor-core work where it is measured apart (FP8 runs twice the operations per
  // clock and draws more power, so its clock can fall further); absent: sustained_compute_scale.
  std::optional<double> sustained_compute_scale_fp8;
  // The same for fused attention kernels where it is measured apart (their softmax and pipeline waits
  // keep the tensor cores part idle, so they draw less power and the clock falls less than under a
  // GEMM); absent: sustained_compute_scale.
  std::optional<double> sustained_attention_scale;
  // Elements per second a PyTorch elementwise kernel that is not vectorized (one element per load:
  // casts, broadcasts, strided copies; ElementwiseTraffic::unvectorized_*) handles on the whole GPU,
  // sustained in training; such a kernel takes the longer of its bytes over HBM and its elements
  // over this rate. A rate of the SMs' issue, so it scales with sustained_compute_scale. 0: bytes only.
  double unvectorized_elementwise_rate = 0;
  // Seconds an elementwise kernel over `elements` moving `bytes` takes when it runs unvectorized.
  double unvectorized_seconds(double elements, double bytes) const {
    const double by_bytes = hbm_seconds(bytes);
    if (unvectorized_elementwise_rate <= 0) return by_bytes;
    return std::max(by_bytes, elements / (unvectorized_elementwise_rate * sustained_scale(MathDtype::bf16)));
  }
  double sustained_scale(MathDtype dtype) const {
    const double own = dtype == MathDtype::fp8 && sustained_compute_scale_fp8 ? *sustained_compute_scale_fp8 : sustained_compute_scale;
    return at_job_power(own) * slowest_chip_scale;
  }
  // A fused attention kernel's: its own where the profile measures it, the tensor cores' otherwise.
  double attention_sustained_scale() const {
    return at_job_power(sustained_attention_scale.value_or(sustained_compute_scale)) * slowest_chip_scale;
  }
  // The board power limit the sustained scales were measured at, and the board's power that does not
  // follow the SM clock (leakage, memory, I/O: its idle draw), in watts; and the exponent by which the
  // settled clock follows the power above that draw (power_clock_scale_at). All three or none.
  std::optional<double> power_limit, idle_power, power_clock_exponent;
  // The limit boards of this kind run at unless cluster.power_limit says otherwise, where it is not
  // power_limit (a fleet that caps its boards below the one the sustained figures were measured at).
  std::optional<double> default_power_limit;
  // The limit a job runs at: the cluster's own, else the profile's default_power_limit; nullopt at power_limit.
  std::optional<double> job_power_limit(std::optional<double> cluster_limit) const {
    return cluster_limit ? cluster_limit : default_power_limit;
  }
  // Sets power_clock_scale for a job at `cluster_limit` (nullopt: the profile's default, else its own limit).
  void set_job_power_limit(std::optional<double> cluster_limit);
  // The SM clock a job's own power limit settles to over the profile's (set_job_size, from
  // cluster.power_limit or default_power_limit; the profile read alone: its default_power_limit's); 1 at
  // the profile's limit.
  double power_clock_scale = 1.0;
  // A sustained scale at the job's power limit: never above the isolated-call (burst) rates.
  double at_job_power(double scale) const { return std::min(1.0, scale * power_clock_scale); }
  // How much the sustained tensor-core throughput of chips of this SKU differs from chip to chip at
  // their power limit (a coefficient of variation): the same clocks and limit bring some dies to a
  // lower clock than others, and a chip keeps its place day after day. 0: every chip alike.
  double chip_spread = 0;
  // The throughput of a job's slowest chip over the profile's typical one (set_job_size): a synchronous
  // step waits for its slowest GPU at every collective, so every rank computes at that pace.
  double slowest_chip_scale = 1.0;
  // Share of the dense peak the GPU's fastest fused attention kernel reaches (training.attention_kernel
  // "flash": FlashAttention-3 on Hopper, FlashAttention-4 on Blackwell); absent: the datasheet peak.
  std::optional<double> attention_efficiency;
  // The same for its backward pass; absent: attention_efficiency.
  std::optional<double> attention_backward_efficiency;
  // What a fused attention kernel keeps of its rate when it drops out the attention probabilities
  // itself (a Philox draw per score, in the forward and again in the backward), forward and backward;
  // absent: dropout priced at no cost.
  std::optional<double> attention_dropout_scale, attention_dropout_backward_scale;
  double attention_dropout_scale_of(bool backward) const {
    return backward ? attention_dropout_backward_scale.value_or(attention_dropout_scale.value_or(1.0))
                    : attention_dropout_scale.value_or(1.0);
  }
  // How a fused attention kernel's efficiency falls in shorter sequences: the efficiencies above hold at
  // `attention_reference_sequence` keys per query (the longest a source measured) and beyond; below it a
  // kernel over `keys` keys reaches (keys / (keys + half)) / (reference / (reference + half)) of them,
  // `half` being the keys at which the fitted curve e·s/(s + half) is at half its asymptote (a causal
  // kernel's diagonal tiles and each query block's prologue weigh more in short sequences). 0: no
  // dependence.
  double attention_half_sequence = 0, attention_reference_sequence = 0;
  // Another library's fused attention on this GPU, under its training.attention_kernel word
  // (attention_kernel_profiles: "flash2", FlashAttention-2 as PyTorch's SDPA runs it; "cudnn", cuDNN's,
  // which Transformer Engine picks), from the profile keys attention_<kernel>_efficiency,
  // _backward_efficiency, _half_sequence and _reference_sequence; a figure it leaves out is the fastest
  // kernel's.
  struct AttentionKernelRates {
    std::optional<double> forward, backward, half_sequence, reference_sequence;
  };
  std::map<std::string, AttentionKernelRates, std::less<>> attention_kernels;
  static const std::vector<std::string>& attention_kernel_profiles();
  // The profile key of one of a kernel's attention figures ("efficiency", "backward_efficiency",
  // "half_sequence", "reference_sequence"): attention_<kernel>_<figure> for a kernel of
  // attention_kernel_profiles, attention_<figure> (the fastest kernel's) for any other.
  static std::string attention_key(std::string_view kernel, std::string_view figure);
  // The fused-attention efficiency of a pass (the backward's own where given) of the named kernel
  // ("flash", or one the profile has rates for), over `keys` keys per query (0: at the reference sequence).
  double attention_efficiency_of(std::string_view kernel, bool backward, double keys = 0) const;
  std::map<std::string, std::string> sources;
};

enum class FabricShape { rail_optimized_fat_tree, fat_tree, clos3 };

struct FabricTopology {
  FabricShape shape = FabricShape::rail_optimized_fat_tree;
  std::int64_t tiers = 2;
  double oversubscription = 1.0;  // downlink : uplink bandwidth at the leaves
  std::int64_t planes = 1;        // independent network planes (DeepSeek's multi-plane fat tree)
  // What the full-rank step's fabric model needs (sim/fabric_tree); absent: a 64-port leaf (NVIDIA
  // Quantum-2 QM9700, 64 ports of 400 Gb/s: 32 down and 32 up when non-blocking), so a rail-optimized
  // leaf takes one rail of 32 nodes (the DGX SuperPOD's 32-node scalable unit) and a fat-tree leaf 32
  // NICs; three tiers put 32 leaves' worth of nodes in a pod (a radix-64 three-tier fat tree's k²/4 = 1024
  // hosts a pod for whole-node leaves).
  std::int64_t nodes_per_leaf = 0;   // 0: the default above
  std::int64_t nodes_per_pod = 0;    // 0: the default above for three tiers; two tiers have one pod
  double pod_oversubscription = 1.0; // pod spine down : up (three tiers)
  bool ecmp = false;                 // ECMP hashing over the leaf's uplinks instead of adaptive routing
  std::int64_t ecmp_uplinks = 32;    // spines a leaf hashes over
};

// One blocking pipeline exchange as measured on a cluster (a send and its receive, waited for, through
// the framework's own calls): latency + bytes / bandwidth. A floor under what the links alone give.
struct PipelineSend {
  double latency = 0;    // seconds
  double bandwidth = 0;  // bytes/s
  double seconds(double bytes) const { return latency + bytes / bandwidth; }
};

struct FabricSpec {
  std::string id;
  std::string name;
  std::int64_t gpus_per_node = 8;
  bool nvswitch = true;
  std::optional<double> nvlink_effective_per_gpu;  // bytes/s, observed
  std::int64_t nics_per_node = 0;
  double nic_rate = 0;                  // bytes/s line rate
  std::optional<double> nic_effective;  // bytes/s, observed
  std::optional<double> nvls_allreduce_algbw;  // bytes/s, NVLS all-reduce algbw inside a node, observed
  std::optional<double> nvlink_latency_scale;   // × NCCL's base and NVLink-hop latencies, fitted (calibrate)
  std::optional<double> network_latency_scale;  // × NCCL's network-hop latencies, fitted (calibrate)
  std::optional<PipelineSend> pipeline_send;    // a pipeline stage's blocking send, measured
  FabricTopology topology;
  std::map<std::string, std::string> sources;
};

struct Cluster {
  GpuSpec gpu;
  FabricSpec fabric;
  std::int64_t nodes = 0;
  // The scenario's own chip_spread for these GPUs (cluster.chip_spread), over the profile's.
  std::optional<double> chip_spread;
  // The board power limit these GPUs run at (cluster.power_limit, watts), where it is not the profile's.
  std::optional<double> power_limit;
  std::int64_t gpus() const { return nodes * fabric.gpus_per_node; }
};

// The expected largest of n independent standard normal draws (0 for one draw, 1/√π for two).
double expected_max_standard_normal(std::int64_t n);
// Sets the GPU's slowest_chip_scale for the cluster's GPUs drawn from the SKU: 1 − chip spread × the
// expected largest of gpus() standard normal draws (the job runs at its slowest chip's pace), and its
// power_clock_scale at the cluster's power limit, else the profile's default (set_job_power_limit). Call it whenever the GPU or
// the node count changes.
void set_job_size(Cluster& cluster);
// The SM clock a sustained tensor-core load settles to under a board power limit of `watts`, over the
// clock at the profile's own limit: f ∝ (limit − idle power)^e, e the profile's power_clock_exponent.
// Dynamic power is C·V²·f: where the voltage still rises with the clock, power grows as f³ (e = 1/3);
// at the voltage floor, as f (e = 1). nullopt where the profile names no power_limit, or the limit is
// not above the idle power.
std::optional<double> power_clock_scale_at(const GpuSpec& gpu, double watts);

std::optional<GpuSpec> read_gpu(const Json& value, const std::string& pointer, const SourceFile& src);
// A GPU (or, with `fabric`, fabric) profile file as plumb reads it: loaded and laid over the profile
// its "base" names, if any, so it stands alone. A discarded value after an error, reported in `src`.
Json load_profile_document(const std::filesystem::path& path, bool fabric, const SourceFile& src);

// A profile file found from what a user typed: a bundled name (GPU profiles first, then fabrics) or a
// path; whether it is a fabric (it has gpus_per_node, itself or through its "base"). nullopt when
// neither a bundled name nor an existing file.
struct ProfileRef {
  std::filesystem::path path;
  bool fabric = false;
};
std::optional<ProfileRef> find_profile_file(const std::string& ref);
// The bundled GPU and fabric profile names, GPUs first.
std::vector<std::string> profile_names();
std::optional<FabricSpec> read_fabric(const Json& value, const std::string& pointer, const SourceFile& src);
// A scenario's "cluster": an object {gpu, nodes, fabric} or a path to a file holding one.
std::optional<Cluster> read_cluster(const Json& value, const std::string& pointer, const SourceFile& src);

std::string_view math_dtype_name(MathDtype d);

}  // namespace plumb
