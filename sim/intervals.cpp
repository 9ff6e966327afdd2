#include "sim/intervals.hpp"

#include <algorithm>

namespace plumb::sim {

std::vector<Interval> merged_intervals(std::vector<Interval> spans) {
  std::sort(spans.begin(), spans.end());
  std::vector<Interval> merged;
  for (const Interval& iv : spans)
    if (!merged.empty() && iv.first <= merged.back().second) merged.back().second = std::max(merged.back().second, iv.second);
    else merged.push_back(iv);
  return merged;
}

double total_length(const std::vector<Interval>& merged) {
  double sum = 0;
  for (const auto& [a, b] : merged) sum += b - a;
  return sum;
}

double overlap_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double sum = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const double lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (hi > lo) sum += hi - lo;
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return sum;
}

}  // namespace plumb::sim
