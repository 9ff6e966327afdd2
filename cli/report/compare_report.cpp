#include "cli/report/compare_report.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace plumb {
namespace {

constexpr const char* kPassNames[] = {"forward", "input gradient", "weight gradient"};

}  // namespace

std::string comparison_text(const Comparison& c) {
  auto pct = [](double predicted, double measured) {
    return measured > 0 ? fmt::format("{:+.1f}%", 100 * (predicted / measured - 1)) : std::string("–");
  };
  std::string out = c.title + "\n";
  out += fmt::format("predicted with the {} profile\n\n", c.profile);
  out += fmt::format("step time   measured {:.3f} ms   predicted {:.3f} ms   error {}\n", c.measured_step * 1e3, c.predicted_step * 1e3,
                     pct(c.predicted_step, c.measured_step));
  out += fmt::format("  its ops ran {} over the profile's prices; at their measured times plumb predicts {:.3f} ms, error {}\n"
                     "  (the first is the kernels' term, the second the schedule's: bubbles, waits, communication)\n\n",
                     pct(c.op_time_ratio, 1), c.predicted_step_at_measured_ops * 1e3,
                     pct(c.predicted_step_at_measured_ops, c.measured_step));
  out += c.order_difference.empty()
             ? fmt::format("op order    as simulated on every rank ({} ops executed)\n\n", c.ops_executed)
             : fmt::format("op order    DIFFERS from the simulated one: {}\n\n", c.order_difference);
  out += " rank   busy ms (measured  predicted)   bubble (measured  predicted)   ops measured/predicted\n";
  for (std::size_t r = 0; r < c.ranks.size(); ++r) {
    const RankComparison& x = c.ranks[r];
    out += fmt::format("{:>5}   {:>17.3f} {:>10.3f}   {:>17.1f}% {:>9.1f}%   {:>22.3f}\n", r, x.measured_busy * 1e3, x.predicted_busy * 1e3,
                       100 * x.measured_bubble, 100 * x.predicted_bubble, x.op_time_ratio);
  }
  out += "\nper step, all ranks, by the term that prices the op:\n";
  for (const KindComparison& k : c.kinds)
    out += fmt::format("  {:<13} measured {:>10.3f} ms   predicted {:>10.3f} ms   error {}\n", k.kind, k.measured * 1e3, k.predicted * 1e3,
                       pct(k.predicted, k.measured));
  std::size_t width = 2;
  for (const OpComparison& o : c.ops) width = std::max(width, o.op.size());
  out += fmt::format("\n{:<{}}  {:<15}  {:>12}  {:>12}  {:>7}\n", "op", width, "pass", "measured ms", "predicted ms", "error");
  for (const OpComparison& o : c.ops)
    out += fmt::format("{:<{}}  {:<15}  {:>12.4f}  {:>12.4f}  {:>7}\n", o.op, width, kPassNames[o.pass], o.measured * 1e3,
                       o.predicted * 1e3, pct(o.predicted, o.measured));
  return out;
}

Json comparison_json(const Comparison& c) {
  Json ranks = Json::array(), ops = Json::array();
  for (const RankComparison& r : c.ranks)
    ranks.push_back({{"measured_busy_s", r.measured_busy},
                     {"predicted_busy_s", r.predicted_busy},
                     {"measured_bubble", r.measured_bubble},
                     {"predicted_bubble", r.predicted_bubble},
                     {"op_time_ratio", r.op_time_ratio}});
  for (const OpComparison& o : c.ops)
    ops.push_back({{"op", o.op}, {"pass", std::string(pass_key(o.pass))}, {"kind", o.kind}, {"runs_per_step", o.runs_per_step},
                   {"measured_s", o.measured}, {"predicted_s", o.predicted}});
  Json kinds = Json::array();
  for (const KindComparison& k : c.kinds) kinds.push_back({{"kind", k.kind}, {"measured_s", k.measured}, {"predicted_s", k.predicted}});
  return {{"title", c.title},
          {"profile", c.profile},
          {"measured_step_s", c.measured_step},
          {"predicted_step_s", c.predicted_step},
          {"error", c.error()},
          {"op_time_ratio", c.op_time_ratio},
          {"predicted_step_at_measured_ops_s", c.predicted_step_at_measured_ops},
          {"error_at_measured_ops", c.error_at_measured_ops()},
          {"same_op_order", c.order_difference.empty()},
          {"op_order_difference", c.order_difference},
          {"ranks", ranks},
          {"kinds", kinds},
          {"ops", ops}};
}

}  // namespace plumb
