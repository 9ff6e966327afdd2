#pragma once
// Maps global ranks onto parallel coordinates and nodes. Dense layers see (tp, cp, dp, pp); expert
// layers fold the same tp·cp·dp ranks into (etp, ep, edp), as Megatron-LM does. The order lists
// dimensions innermost first; consecutive ranks fill a node.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/parallel/layout.hpp"

namespace plumb {

// A dimension of the layout, and the process groups along it: dense layers' tensor, context, data and
// pipeline parallelism, and expert layers' expert, expert-tensor and expert-data parallelism.
enum class ParallelDim { tp, cp, dp, pp, ep, etp, edp };
std::string_view parallel_dim_name(ParallelDim d);  // "tp", "cp", …

struct RankCoords {
  std::int64_t tp = 0, cp = 0, dp = 0, pp = 0;  // dense view
  std::int64_t etp = 0, ep = 0, edp = 0;       // expert view (same pp)
};

struct GroupSpan {
  ParallelDim kind = ParallelDim::tp;
  std::int64_t size = 0;     // ranks per group
  std::int64_t groups = 0;
  std::int64_t nodes_min = 0, nodes_max = 0;          // nodes one group spans
  std::int64_t gpus_per_node_max = 0;                 // most members of one group on one node
};

class Placement {
 public:
  // Returns nullopt with `why` set when the order makes dense and expert views disagree on pp.
  static std::optional<Placement> make(const ParallelLayout& layout, std::int64_t gpus_per_node, std::string* why);

  RankCoords coords(std::int64_t rank) const;
  std::int64_t node_of(std::int64_t rank) const { return rank / gpus_per_node_; }
  std::vector<GroupSpan> spans() const;  // for every dimension of size > 1 (tp/dp/pp always)

 private:
  struct Axis {
    ParallelDim name = ParallelDim::tp;
    std::int64_t size = 1;
    std::int64_t stride = 1;
  };
  std::int64_t coordinate(const std::vector<Axis>& axes, ParallelDim name, std::int64_t rank) const;
  GroupSpan span_of(const std::vector<Axis>& axes, ParallelDim name) const;

  std::vector<Axis> dense_, expert_;
  std::int64_t ranks_ = 0;
  std::int64_t gpus_per_node_ = 1;
};

}  // namespace plumb
