#include "sim/machine.hpp"

#include <algorithm>
#include <stdexcept>

namespace plumb::sim {

RateCurve::RateCurve(std::vector<std::pair<double, double>> points) : points_(std::move(points)) {
  if (points_.size() < 2 || !std::is_sorted(points_.begin(), points_.end()))
    throw std::invalid_argument("RateCurve: needs at least two points in rising order of fraction");
}

double RateCurve::speed(double fraction) const {
  if (fraction <= points_.front().first) return points_.front().second;
  for (std::size_t i = 1; i < points_.size(); ++i) {
    auto [x0, y0] = points_[i - 1];
    auto [x1, y1] = points_[i];
    if (fraction <= x1) return y0 + (y1 - y0) * (fraction - x0) / (x1 - x0);
  }
  return points_.back().second;
}

std::int32_t Machine::add_gpu(std::string name, std::int32_t sms, std::optional<Topology::Vertex> vertex) {
  if (sms < 1) throw std::invalid_argument("Machine: a GPU needs at least one SM");
  gpus_.push_back({std::move(name), sms, vertex});
  return static_cast<std::int32_t>(gpus_.size() - 1);
}

StreamId Machine::add_stream(std::int32_t gpu, std::string name) {
  if (gpu < 0 || static_cast<std::size_t>(gpu) >= gpus_.size()) throw std::out_of_range("Machine: unknown GPU");
  streams_.push_back({std::move(name), gpu});
  return static_cast<StreamId>(streams_.size() - 1);
}

std::optional<std::int32_t> Machine::gpu_at(Topology::Vertex v) const {
  for (std::size_t g = 0; g < gpus_.size(); ++g)
    if (gpus_[g].vertex == v) return static_cast<std::int32_t>(g);
  return std::nullopt;
}

}  // namespace plumb::sim
