#include "models/schedules/held_bytes.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <tuple>

#include "models/schedules/registry.hpp"

namespace plumb {
namespace {

constexpr std::size_t kKept = 256;  // orders kept at once

// The peaks over rank r's ops of the activation sets with the stashes and without them.
struct Peaks {
  double with_stash = 0, sets_alone = 0;
};

Peaks walk(const PipelineSchedule& s, std::int64_t r, const std::vector<double>& activation, const std::vector<double>& stash) {
  auto of = [](const std::vector<double>& v, std::int32_t stage) { return v.at(static_cast<std::size_t>(stage)); };
  double held = 0, sets = 0;
  Peaks peak;
  auto note = [&] {
    peak.with_stash = std::max(peak.with_stash, held);
    peak.sets_alone = std::max(peak.sets_alone, sets);
  };
  for (const PipeOp& o : s.ops.at(static_cast<std::size_t>(r))) {
    switch (o.kind) {
      case OpKind::forward:
        held += of(activation, o.work.stage);
        sets += of(activation, o.work.stage);
        break;
      case OpKind::backward:
        held -= of(activation, o.work.stage);
        sets -= of(activation, o.work.stage);
        break;
      case OpKind::backward_input:
        held -= of(activation, o.work.stage) - of(stash, o.work.stage);
        sets -= of(activation, o.work.stage);
        break;
      case OpKind::weight: held -= of(stash, o.work.stage); break;
      case OpKind::forward_backward:
        // The pair's forward allocates while its backward (a whole one) still holds its own set.
        held += of(activation, o.work.stage);
        sets += of(activation, o.work.stage);
        note();
        held -= of(activation, o.other.stage);
        sets -= of(activation, o.other.stage);
        break;
    }
    note();
  }
  return peak;
}

}  // namespace

double peak_held_bytes(const PipelineSchedule& s, std::int64_t r, const std::vector<double>& activation,
                       const std::vector<double>& stash) {
  return walk(s, r, activation, stash).with_stash;
}

double stash_peak_increase(const PipelineSchedule& s, std::int64_t r, const std::vector<double>& activation,
                           const std::vector<double>& stash) {
  const Peaks p = walk(s, r, activation, stash);
  return std::max(0.0, p.with_stash - p.sets_alone);
}

std::shared_ptr<const PipelineSchedule> equal_time_schedule(ScheduleKind kind, const ScheduleShape& shape, double stash) {
  using Key = std::tuple<ScheduleKind, std::int64_t, std::int64_t, std::int64_t, double>;
  static std::mutex mutex;
  static std::map<Key, std::shared_ptr<const PipelineSchedule>> built;
  // Only the heuristic's order depends on the stash; rounded up to 1/32 of a set, the layouts a planner
  // tries share a handful of orders (it counts a little more stash, never less).
  stash = schedule_family(kind).orders_by_op_times ? std::ceil(stash * 32.0) / 32.0 : 0.0;
  const Key key{kind, shape.ranks, shape.microbatches, shape.vp, stash};
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = built.find(key); it != built.end()) return it->second;
  }
  OpTimes equal;
  equal.stash = stash;
  auto s = std::make_shared<const PipelineSchedule>(schedule_for(kind, shape, equal));
  std::lock_guard<std::mutex> lock(mutex);
  if (built.size() >= kKept) built.clear();  // a planner's space has a few shapes; a bound all the same
  return built.emplace(key, std::move(s)).first->second;
}

}  // namespace plumb
