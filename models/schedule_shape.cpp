#include "models/schedule_shape.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace plumb {

const std::vector<std::pair<std::string, ScheduleKind>>& schedule_names() {
  static const std::vector<std::pair<std::string, ScheduleKind>> names{
      {"gpipe", ScheduleKind::gpipe},       {"1f1b", ScheduleKind::one_f_one_b},
      {"interleaved", ScheduleKind::interleaved}, {"zb-h1", ScheduleKind::zb_h1},
      {"zb-h2", ScheduleKind::zb_h2},       {"zb-v", ScheduleKind::zb_v},
      {"dualpipe", ScheduleKind::dualpipe}, {"dualpipev", ScheduleKind::dualpipe_v}};
  return names;
}

std::string_view schedule_name(ScheduleKind s) {
  for (const auto& [name, kind] : schedule_names())
    if (kind == s) return name;
  return "?";
}

std::int64_t stage_count(ScheduleKind s, std::int64_t pp, std::int64_t vp) {
  switch (s) {
    case ScheduleKind::interleaved: return pp * vp;
    case ScheduleKind::zb_v:
    case ScheduleKind::dualpipe_v: return 2 * pp;
    default: return pp;
  }
}

std::vector<std::int64_t> stages_of_rank(ScheduleKind s, std::int64_t r, std::int64_t pp, std::int64_t vp) {
  switch (s) {
    case ScheduleKind::interleaved: {
      std::vector<std::int64_t> stages;
      for (std::int64_t k = 0; k < vp; ++k) stages.push_back(r + k * pp);
      return stages;
    }
    case ScheduleKind::zb_v:
    case ScheduleKind::dualpipe_v: return {r, 2 * pp - 1 - r};
    case ScheduleKind::dualpipe: return {r, pp - 1 - r};
    default: return {r};
  }
}

double peak_inflight_stage_microbatches(ScheduleKind s, std::int64_t r, std::int64_t pp, std::int64_t vp,
                                        std::int64_t m) {
  std::int64_t held = static_cast<std::int64_t>(stages_of_rank(s, r, pp, vp).size());
  std::int64_t count = 0;
  switch (s) {
    case ScheduleKind::gpipe: count = m; break;
    case ScheduleKind::one_f_one_b:
    case ScheduleKind::zb_h1: count = pp - r; break;
    case ScheduleKind::interleaved: count = 2 * (pp - r - 1) + (vp - 1) * pp + 1; break;
    case ScheduleKind::zb_h2: count = 2 * (pp - r) - 1; break;
    case ScheduleKind::zb_v: count = 2 * pp; break;
    case ScheduleKind::dualpipe: count = pp + 1; break;
    case ScheduleKind::dualpipe_v: count = 2 * pp + 1; break;
  }
  return static_cast<double>(std::min(count, m * held));
}

std::vector<ScheduleViolation> schedule_constraint_violations(ScheduleKind s, std::int64_t pp, std::int64_t vp,
                                                              std::int64_t m) {
  std::vector<ScheduleViolation> v;
  std::string_view name = schedule_name(s);
  if (s == ScheduleKind::interleaved) {
    if (vp < 2) v.push_back({"vp", fmt::format("the interleaved schedule needs vp ≥ 2 virtual stages per rank, got vp {}", vp)});
    if (pp < 2) v.push_back({"pp", "the interleaved schedule needs a pipeline (pp ≥ 2) to interleave"});
    if (m % pp != 0)
      v.push_back({"micro_batch", fmt::format("the interleaved schedule needs the {} micro-batches to be a multiple of "
                                              "pp {} (Megatron's micro-batch group rule)", m, pp)});
  } else if (vp != 1) {
    v.push_back({"vp", fmt::format("vp {} applies only to the interleaved schedule; {} needs vp 1", vp, name)});
  }
  if (s == ScheduleKind::dualpipe) {
    if (pp % 2 != 0) v.push_back({"pp", fmt::format("dualpipe needs an even number of pipeline ranks, got pp {}", pp)});
    if (m % 2 != 0 || m < 2 * pp)
      v.push_back({"micro_batch", fmt::format("dualpipe needs an even number of micro-batches ≥ 2·pp = {}, got {}", 2 * pp, m)});
  }
  if (s == ScheduleKind::dualpipe_v && m < 2 * pp)
    v.push_back({"micro_batch", fmt::format("dualpipev needs micro-batches ≥ 2·pp = {}, got {}", 2 * pp, m)});
  if (s == ScheduleKind::zb_v && m < pp)
    v.push_back({"micro_batch", fmt::format("zb-v needs at least pp = {} micro-batches, got {}", pp, m)});
  return v;
}

}  // namespace plumb
