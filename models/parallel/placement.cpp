#include "models/parallel/placement.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace plumb {
namespace {

struct Dim {
  ParallelDim name;
  std::int64_t size;
};

}  // namespace

std::string_view parallel_dim_name(ParallelDim d) {
  switch (d) {
    case ParallelDim::tp: return "tp";
    case ParallelDim::cp: return "cp";
    case ParallelDim::dp: return "dp";
    case ParallelDim::pp: return "pp";
    case ParallelDim::ep: return "ep";
    case ParallelDim::etp: return "etp";
    case ParallelDim::edp: return "edp";
  }
  return "?";
}

std::optional<Placement> Placement::make(const ParallelLayout& p, std::int64_t gpus_per_node, std::string* why) {
  Placement pl;
  pl.ranks_ = p.gpus();
  pl.gpus_per_node_ = gpus_per_node;
  auto build = [](const std::vector<Dim>& dims) {
    std::vector<Axis> axes;
    std::int64_t stride = 1;
    for (const Dim& d : dims) {
      axes.push_back({d.name, d.size, stride});
      stride *= d.size;
    }
    return axes;
  };
  std::vector<Dim> dense, expert;
  for (const std::string& name : p.order) {
    if (name == "tp") {
      dense.push_back({ParallelDim::tp, p.tp});
      expert.push_back({ParallelDim::etp, p.etp});
    } else if (name == "cp") {
      dense.push_back({ParallelDim::cp, p.cp});
    } else if (name == "dp") {
      dense.push_back({ParallelDim::dp, p.dp});
      expert.push_back({ParallelDim::edp, p.edp()});
    } else if (name == "ep") {
      expert.push_back({ParallelDim::ep, p.ep});
    } else {
      dense.push_back({ParallelDim::pp, p.pp});
      expert.push_back({ParallelDim::pp, p.pp});
    }
  }
  pl.dense_ = build(dense);
  pl.expert_ = build(expert);
  // Expert layers live on the same pipeline stage as the dense layers around them.
  auto pp_stride = [](const std::vector<Axis>& axes) {
    return std::find_if(axes.begin(), axes.end(), [](const Axis& a) { return a.name == ParallelDim::pp; })->stride;
  };
  if (p.pp > 1 && pp_stride(pl.dense_) != pp_stride(pl.expert_)) {
    if (why) *why = "this order places pipeline stages differently for dense and expert layers; keep pp outside tp, cp, ep and dp "
                    "(e.g. \"tp-cp-ep-dp-pp\")";
    return std::nullopt;
  }
  return pl;
}

std::int64_t Placement::coordinate(const std::vector<Axis>& axes, ParallelDim name, std::int64_t rank) const {
  for (const Axis& a : axes)
    if (a.name == name) return (rank / a.stride) % a.size;
  return 0;
}

RankCoords Placement::coords(std::int64_t rank) const {
  return {coordinate(dense_, ParallelDim::tp, rank),  coordinate(dense_, ParallelDim::cp, rank),  coordinate(dense_, ParallelDim::dp, rank),
          coordinate(dense_, ParallelDim::pp, rank),  coordinate(expert_, ParallelDim::etp, rank), coordinate(expert_, ParallelDim::ep, rank),
          coordinate(expert_, ParallelDim::edp, rank)};
}

GroupSpan Placement::span_of(const std::vector<Axis>& axes, ParallelDim name) const {
  const Axis& axis = *std::find_if(axes.begin(), axes.end(), [&](const Axis& a) { return a.name == name; });
  GroupSpan s{name, axis.size, ranks_ / axis.size, ranks_, 0, 0};
  std::vector<std::int64_t> nodes;
  // A group is every rank that differs from its first member only along `axis`; first members are
  // a·stride·size + b with b < stride. How a group falls on nodes depends only on where its first
  // member sits within a node, and those offsets repeat after gpus_per_node steps of a and of b.
  const std::int64_t period = axis.stride * axis.size;
  const std::int64_t blocks = std::min(ranks_ / period, gpus_per_node_), offsets = std::min(axis.stride, gpus_per_node_);
  auto measure = [&](std::int64_t first) {
    if (axis.stride >= gpus_per_node_) {  // members a node or more apart: one per node
      s.nodes_min = std::min(s.nodes_min, axis.size);
      s.nodes_max = std::max(s.nodes_max, axis.size);
      s.gpus_per_node_max = std::max<std::int64_t>(s.gpus_per_node_max, 1);
      return;
    }
    nodes.clear();
    // Members rise in rank, so their nodes come sorted.
    for (std::int64_t k = 0; k < axis.size; ++k) nodes.push_back(node_of(first + k * axis.stride));
    std::int64_t distinct = 0, run = 0, most = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      run = (i > 0 && nodes[i] == nodes[i - 1]) ? run + 1 : 1;
      if (run == 1) ++distinct;
      most = std::max(most, run);
    }
    s.nodes_min = std::min(s.nodes_min, distinct);
    s.nodes_max = std::max(s.nodes_max, distinct);
    s.gpus_per_node_max = std::max(s.gpus_per_node_max, most);
  };
  for (std::int64_t a = 0; a < blocks; ++a)
    for (std::int64_t b = 0; b < offsets; ++b) measure(a * period + b);
  return s;
}

std::vector<GroupSpan> Placement::spans() const {
  std::vector<GroupSpan> out;
  for (const Axis& a : dense_)
    if (a.size > 1 || a.name != ParallelDim::cp) out.push_back(span_of(dense_, a.name));
  for (const Axis& a : expert_)
    if (a.name != ParallelDim::pp && a.size > 1) out.push_back(span_of(expert_, a.name));
  return out;
}

}  // namespace plumb
