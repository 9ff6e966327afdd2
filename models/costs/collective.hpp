#pragma once
// Collectives costed over a group's placement: how many nodes it spans and how many of its GPUs sit
// in each node decide which links it crosses. Algorithms as NCCL runs them: ring, double binary tree,
// NVLS (reduction inside the NVSwitch) and a hierarchical two-level form; protocols LL, LL128 and
// Simple; "auto" picks the fastest, as NCCL's tuner does. Sizes follow nccl-tests: `bytes` is the
// whole buffer, and algbw/busbw are reported with its bus-bandwidth factors.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "models/hardware/hardware.hpp"

namespace plumb {

enum class CollectiveOp { all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, send_recv };
// point_to_point is how all-to-all and send/recv run; it is not chosen, it is what they are.
enum class CollectiveAlgo { automatic, ring, tree, nvls, hierarchical, point_to_point };
enum class Protocol { ll, ll128, simple };

std::string_view collective_op_name(CollectiveOp op);
std::string_view collective_algo_name(CollectiveAlgo a);
std::string_view protocol_name(Protocol p);
const std::vector<std::pair<std::string, CollectiveOp>>& collective_op_names();
const std::vector<std::pair<std::string, CollectiveAlgo>>& collective_algo_names();

// nccl-tests (doc/PERFORMANCE.md): busbw = algbw × 2(n−1)/n for all-reduce; × (n−1)/n for
// reduce-scatter, all-gather and all-to-all; × 1 for broadcast and send/recv.
double bus_factor(CollectiveOp op, std::int64_t n);

// A group of `gpus` GPUs spread evenly over `nodes` nodes.
struct GroupPlacement {
  std::int64_t gpus = 8;
  std::int64_t nodes = 1;
  std::int64_t per_node() const { return gpus / nodes; }
};

// The link speeds a collective sees, from the GPU and fabric profiles (effective figures where the
// profile has them, line rates otherwise).
struct CollectiveLinks {
  double nvlink = 0;                 // bytes/s per GPU per direction inside a node
  double network = 0;                // bytes/s per GPU across nodes (its NIC share)
  std::optional<double> nvls_algbw;  // NVLS all-reduce algbw inside a node, where NVSwitch reduces
  // Multipliers on NCCL's latency tables (1 = NCCL's own figures): `nvlink_latency_scale` on the base
  // latency and every NVLink hop (all a single-node measurement sees), `network_latency_scale` on every
  // network hop. plumb calibrate fits them to nccl-tests logs.
  double nvlink_latency_scale = 1;
  double network_latency_scale = 1;
  static CollectiveLinks of(const GpuSpec& gpu, const FabricSpec& fabric);
};

struct CollectiveCost {
  double seconds = 0;
  CollectiveAlgo algo = CollectiveAlgo::ring;
  Protocol protocol = Protocol::simple;
  double algbw = 0;  // bytes/s: bytes / seconds
  double busbw = 0;  // bytes/s: algbw × bus_factor
};

// Throws std::invalid_argument when the algorithm cannot run this collective on this group (NVLS
// across nodes, a tree for all-to-all, …). `automatic` never throws for n ≥ 1.
// `protocol`, when given, fixes the protocol instead of taking the fastest.
CollectiveCost collective_cost(CollectiveOp op, double bytes, const GroupPlacement& group, const CollectiveLinks& links,
                               CollectiveAlgo algo = CollectiveAlgo::automatic,
                               std::optional<Protocol> protocol = std::nullopt);

// Seconds of `op` moving `bytes` over `group` at its automatic algorithm: zero when the group is one GPU
// or nothing moves.
double collective_seconds(CollectiveOp op, double bytes, const GroupPlacement& group, const CollectiveLinks& links);

// Collectives that run at the same time on the same GPUs share their links (max-min fair, as the
// flow-level network shares them): each sees 1/`concurrent` of NVLink and of the NICs.
CollectiveLinks shared_links(const CollectiveLinks& links, int concurrent);

// MoE dispatch (or combine) within an EP group, DeepSeek-V3 style (report §3.2.2): a token crosses
// the network once per target node — to the GPU with its own in-node index — and is forwarded over
// NVLink to the GPUs holding its experts. With node-limited routing each token reaches at most
// `max_nodes` nodes (DeepSeek-V3: 4); 0 means unlimited, where a token reaches every node holding one
// of its top-k experts (uniform routing).
struct DispatchShape {
  double tokens = 0;           // tokens each GPU sends
  double bytes_per_token = 0;  // hidden × element size
  std::int64_t top_k = 8;
  std::int64_t max_nodes = 0;
};
struct DispatchCost {
  double seconds = 0;
  double network_bytes = 0;  // per GPU
  double nvlink_bytes = 0;   // per GPU
  bool network_bound = true;
};
DispatchCost moe_dispatch_cost(const DispatchShape& d, const GroupPlacement& ep_group, const CollectiveLinks& links);
// How many of `groups` equal groups (nodes, EP ranks) a token reaches on average when it picks `picks`
// distinct experts uniformly at random: groups · (1 − (1 − 1/groups)^picks).
double groups_reached(double groups, double picks);

}  // namespace plumb
