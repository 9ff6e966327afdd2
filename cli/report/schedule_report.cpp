#include "cli/report/schedule_report.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace plumb {
namespace {

char kind_char(OpKind k) {
  switch (k) {
    case OpKind::forward: return 'F';
    case OpKind::backward: return 'B';
    case OpKind::backward_input: return 'b';
    case OpKind::weight: return 'W';
    case OpKind::forward_backward: return 'X';
  }
  return '?';
}

const char* kind_colour(OpKind k) {
  switch (k) {
    case OpKind::forward: return "#4e79a7";
    case OpKind::backward: return "#59a14f";
    case OpKind::backward_input: return "#8cd17d";
    case OpKind::weight: return "#f28e2b";
    case OpKind::forward_backward: return "#b07aa1";
  }
  return "#999";
}

std::string op_label(const PipeOp& o) {
  return o.kind == OpKind::forward_backward ? fmt::format("{}&{}", o.work.mb, o.other.mb) : fmt::format("{}", o.work.mb);
}

}  // namespace

std::string schedule_grid(const PipelineSchedule& s, const ScheduleRun& run, int max_width) {
  // The smallest op gets at least two characters when that fits the width.
  double smallest = run.makespan;
  auto rows = placed_ops(s, run);
  for (const auto& row : rows)
    for (const PlacedOp& p : row)
      if (p.end > p.start) smallest = std::min(smallest, p.end - p.start);
  double scale = std::min(2.0 / std::max(smallest, 1e-9), static_cast<double>(max_width) / std::max(run.makespan, 1e-9));
  int width = static_cast<int>(std::ceil(run.makespan * scale));
  std::string out = fmt::format("{} · {} ranks · {} stages · {} micro-batches · makespan {:.4g}\n", schedule_name(s.kind),
                                s.ranks, s.stages, s.microbatches, run.makespan);
  out += "F forward  B backward  b input-gradient  W weight-gradient  X F&B  . idle (numbers: micro-batch)\n\n";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::string line(static_cast<std::size_t>(width), '.');
    for (const PlacedOp& p : rows[r]) {
      int from = static_cast<int>(std::lround(p.start * scale)), to = static_cast<int>(std::lround(p.end * scale));
      if (to <= from) continue;
      std::string label = op_label(*p.op);
      for (int c = from; c < to && c < width; ++c) line[static_cast<std::size_t>(c)] = kind_char(p.op->kind);
      if (static_cast<int>(label.size()) < to - from)
        for (std::size_t k = 0; k < label.size(); ++k) line[static_cast<std::size_t>(from + 1) + k] = label[k];
    }
    const RankTiming& t = run.ranks[r];
    out += fmt::format("rank {:>2} |{}|  bubble {:.4g} ({:.1f}%)  peak {} \n", r, line, t.bubble, 100 * t.bubble_fraction,
                       t.peak_activations);
  }
  return out;
}

std::string xml_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string schedule_svg(const PipelineSchedule& s, const ScheduleRun& run) {
  return schedule_svg(s, placed_ops(s, run), run.makespan,
                      fmt::format("{} · {} ranks · {} micro-batches · makespan {:.4g}", schedule_name(s.kind), s.ranks,
                                  s.microbatches, run.makespan));
}

std::string schedule_svg(const PipelineSchedule& s, const std::vector<std::vector<PlacedOp>>& rows, double makespan,
                         const std::string& title) {
  const double unit = 900.0 / std::max(makespan, 1e-9), row = 28, left = 70, top = 40;
  const double height = top + row * static_cast<double>(s.ranks) + 50;
  std::string out = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" font-family="sans-serif" font-size="11">)"
      "\n",
      left + 900 + 20, height);
  out += fmt::format(R"(<text x="{}" y="20" font-size="14">{}</text>)" "\n", left, xml_escape(title));
  for (std::size_t r = 0; r < rows.size(); ++r) {
    double y = top + row * static_cast<double>(r);
    out += fmt::format(R"(<text x="5" y="{:.1f}">rank {}</text>)" "\n", y + row * 0.65, r);
    out += fmt::format(R"(<rect x="{}" y="{:.1f}" width="900" height="{:.1f}" fill="#eeeeee"/>)" "\n", left, y, row - 4);
    for (const PlacedOp& p : rows[r]) {
      double x = left + p.start * unit, w = (p.end - p.start) * unit;
      out += fmt::format(R"(<rect x="{:.2f}" y="{:.1f}" width="{:.2f}" height="{:.1f}" fill="{}" stroke="white" stroke-width="0.5"><title>{} {}</title></rect>)" "\n",
                         x, y, w, row - 4, kind_colour(p.op->kind), op_kind_symbol(p.op->kind), xml_escape(op_label(*p.op)));
      if (w > 14)
        out += fmt::format(R"(<text x="{:.2f}" y="{:.1f}" fill="white" text-anchor="middle">{}</text>)" "\n", x + w / 2,
                           y + row * 0.6, xml_escape(op_label(*p.op)));
    }
  }
  double y = top + row * static_cast<double>(s.ranks) + 20, x = left;
  for (OpKind k : {OpKind::forward, OpKind::backward, OpKind::backward_input, OpKind::weight, OpKind::forward_backward}) {
    out += fmt::format(R"(<rect x="{:.0f}" y="{:.0f}" width="12" height="12" fill="{}"/><text x="{:.0f}" y="{:.0f}">{}</text>)" "\n",
                       x, y, kind_colour(k), x + 16, y + 10, op_kind_symbol(k));
    x += 60;
  }
  out += fmt::format(R"(<rect x="{:.0f}" y="{:.0f}" width="12" height="12" fill="#eeeeee"/><text x="{:.0f}" y="{:.0f}">idle</text>)" "\n",
                     x, y, x + 16, y + 10);
  out += "</svg>\n";
  return out;
}

Json schedule_json(const PipelineSchedule& s, const ScheduleRun& run) {
  Json out;
  out["schedule"] = std::string(schedule_name(s.kind));
  out["ranks_count"] = s.ranks;
  out["stages"] = s.stages;
  out["microbatches"] = s.microbatches;
  out["makespan"] = run.makespan;
  out["max_bubble"] = run.max_bubble();
  out["longest_span_bubble"] = run.longest_span_bubble();
  auto rows = placed_ops(s, run);
  Json ranks = Json::array();
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const RankTiming& t = run.ranks[r];
    Json ops = Json::array();
    for (const PlacedOp& p : rows[r]) {
      Json o{{"kind", std::string(op_kind_symbol(p.op->kind))}, {"mb", p.op->work.mb}, {"stage", p.op->work.stage},
             {"direction", s.direction(p.op->work)}, {"start", p.start}, {"end", p.end}};
      if (p.op->kind == OpKind::forward_backward)
        o["backward"] = {{"mb", p.op->other.mb}, {"stage", p.op->other.stage},
                         {"direction", s.direction(p.op->other)}};
      ops.push_back(o);
    }
    ranks.push_back({{"bubble", t.bubble}, {"bubble_fraction", t.bubble_fraction}, {"span_bubble", t.span_bubble},
                     {"busy", t.busy}, {"peak_activations", t.peak_activations}, {"ops", ops}});
  }
  out["ranks"] = ranks;
  return out;
}

std::string comparison_table(const std::vector<ScheduleComparison>& rows, std::int64_t pp, std::int64_t microbatches) {
  std::string out = fmt::format(
      "{} ranks, {} micro-batches; costs per op are for one rank's share of the model\n"
      "bubble: worst rank's idle time over the makespan; span: the longest stage's idle within its own span\n"
      "activations: peak micro-batches in flight, in units of one rank's share of the layers; params: per device, ×1F1B\n\n",
      pp, microbatches);
  out += fmt::format("{:<12} {:>10} {:>9} {:>8} {:>9} {:>12} {:>7}\n", "schedule", "makespan", "bubble", "bubble%", "span",
                     "activations", "params");
  for (const ScheduleComparison& c : rows) {
    if (!c.unavailable.empty()) {
      out += fmt::format("{:<12} n/a: {}\n", c.name, c.unavailable);
      continue;
    }
    out += fmt::format("{:<12} {:>10.4g} {:>9.4g} {:>7.1f}% {:>9.4g} {:>12.4g} {:>6.3g}×\n", c.name, c.makespan, c.bubble,
                       100 * c.bubble_fraction, c.span_bubble, c.peak_activations, c.params);
  }
  return out;
}

}  // namespace plumb
