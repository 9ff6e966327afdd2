#pragma once
// What the engine runs on: GPUs with an SM count, each with in-order streams (compute,
// communication, copy engines), optionally placed on a topology vertex for transfers.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/task_graph.hpp"
#include "sim/topology.hpp"

namespace plumb::sim {

// Speed of a compute task as a function of the fraction of its GPU's SMs it gets (1 → full speed).
// Piecewise linear through the given points; the default is proportional (speed = fraction).
class RateCurve {
 public:
  RateCurve() = default;
  explicit RateCurve(std::vector<std::pair<double, double>> points);  // (fraction, speed), fractions rising
  double speed(double fraction) const;

 private:
  std::vector<std::pair<double, double>> points_{{0.0, 0.0}, {1.0, 1.0}};
};

struct SimGpu {
  std::string name;
  std::int32_t sms = 132;
  std::optional<Topology::Vertex> vertex;  // where its transfers start and end
};

struct SimStream {
  std::string name;
  std::int32_t gpu = 0;
};

class Machine {
 public:
  std::int32_t add_gpu(std::string name, std::int32_t sms, std::optional<Topology::Vertex> vertex = std::nullopt);
  StreamId add_stream(std::int32_t gpu, std::string name);

  const std::vector<SimGpu>& gpus() const { return gpus_; }
  const std::vector<SimStream>& streams() const { return streams_; }
  std::int32_t gpu_of(StreamId s) const { return streams_[static_cast<std::size_t>(s)].gpu; }
  // The GPU placed on a topology vertex, if any.
  std::optional<std::int32_t> gpu_at(Topology::Vertex v) const;

  RateCurve curve;

 private:
  std::vector<SimGpu> gpus_;
  std::vector<SimStream> streams_;
};

}  // namespace plumb::sim
