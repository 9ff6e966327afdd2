#pragma once
// Time intervals as timelines need them: a set of (start, end) spans as sorted disjoint intervals,
// their total length, and how long two such sets overlap. Any unit.
#include <utility>
#include <vector>

namespace plumb::sim {

using Interval = std::pair<double, double>;

// Sorted, disjoint intervals covering the time `spans` cover (overlaps counted once).
std::vector<Interval> merged_intervals(std::vector<Interval> spans);
// The summed length of disjoint intervals.
double total_length(const std::vector<Interval>& merged);
// How long two sets of sorted, disjoint intervals overlap.
double overlap_length(const std::vector<Interval>& a, const std::vector<Interval>& b);

}  // namespace plumb::sim
