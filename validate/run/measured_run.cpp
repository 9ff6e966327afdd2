#include "validate/run/measured_run.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "models/input/diagnostics.hpp"
#include "models/input/statistics.hpp"

namespace plumb {

namespace {
constexpr const char* kPassNames[] = {"forward", "input_grad", "weight_grad"};
}

std::string_view pass_key(int pass) { return kPassNames[pass]; }

double MeasuredRun::median_step() const { return median(step_seconds); }

namespace {
std::string op_label(const VirtualRun& run, const MeasuredOp& op) {
  const PipeOp& p = run.schedule.ops[static_cast<std::size_t>(op.rank)][static_cast<std::size_t>(op.index)];
  if (p.kind == OpKind::forward_backward)
    return fmt::format("F{} s{} & B{} s{}", p.work.mb, p.work.stage, p.other.mb, p.other.stage);
  return fmt::format("{}{} s{}", op_kind_symbol(p.kind), p.work.mb, p.work.stage);
}
}  // namespace

Json measured_trace_json(const VirtualRun& run, const MeasuredRun& measured) {
  Json events = Json::array();
  for (std::size_t r = 0; r < run.schedule.ops.size(); ++r) {
    std::string name = fmt::format("rank {} ({} SMs)", r, r < measured.sms.size() ? measured.sms[r] : 0);
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", r}, {"args", {{"name", name}}}});
  }
  for (const MeasuredOp& op : measured.timeline)
    events.push_back({{"ph", "X"},
                      {"name", op_label(run, op)},
                      {"pid", op.rank},
                      {"tid", 0},
                      {"ts", op.start * 1e6},
                      {"dur", (op.end - op.start) * 1e6}});
  for (const MeasuredSpan& g : measured.gradient_reductions)
    events.push_back({{"ph", "X"}, {"name", "gradient all-reduce"}, {"pid", g.rank}, {"tid", 1}, {"ts", g.start * 1e6}, {"dur", (g.end - g.start) * 1e6}});
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

Json measured_run_json(const MeasuredSetup& setup, const VirtualRun& run, const MeasuredRun& measured) {
  Json timeline = Json::array();
  for (const MeasuredOp& op : measured.timeline) {
    timeline.push_back({{"rank", op.rank},
                        {"index", op.index},
                        {"op", op_label(run, op)},
                        {"start_s", op.start},
                        {"end_s", op.end}});
  }
  Json reductions = Json::array();
  for (const MeasuredSpan& g : measured.gradient_reductions) reductions.push_back({{"rank", g.rank}, {"start_s", g.start}, {"end_s", g.end}});
  Json ops = Json::array();
  for (const MeasuredOpTime& t : measured.op_times)
    ops.push_back({{"op", t.op}, {"pass", kPassNames[t.pass]}, {"seconds", t.seconds}, {"runs", t.runs}});
  return {{"plumb_measured_run", 1},
          {"device", setup.device},
          {"driver", setup.driver},
          {"clock_mhz", setup.clock_mhz},
          {"date", setup.date},
          {"scenario", setup.scenario},
          {"set", setup.overrides},
          {"virtual", virtual_options_json(setup.options)},
          {"sms_per_rank", measured.sms},
          {"note", setup.options.stage_per_profile
                       ? "plumb-validate run --backend host: each pipeline rank a thread (or MPI process) of its own, timed by its "
                         "clock of thread CPU time around every op and kernel; times in seconds from the step's start; op times "
                         "are medians over every occurrence in the timed steps; the timeline is the median step's"
                       : "plumb-validate run: each pipeline rank on its own green context; CUDA events around every op and kernel; "
                         "times in seconds from the step's start (all ranks released together); op times are medians over every "
                         "occurrence in the timed steps; the timeline is the median step's"},
          {"step_time_s", measured.median_step()},
          {"step_times_s", measured.step_seconds},
          {"timeline", timeline},
          {"gradient_reductions", reductions},
          {"ops", ops}};
}

namespace {
// The optional list at `key`; anything but a list is an error saying what it holds.
const Json* list_at(ObjectReader& r, const char* key, std::string_view holds) {
  const Json* v = r.child(key, Need::optional);
  if (v && !v->is_array()) {
    r.error(key, fmt::format("expected a list of {}, found {}", holds, json_brief(*v)));
    return nullptr;
  }
  return v;
}
}  // namespace

MeasuredFile read_measured_run(const std::string& path) {
  Diagnostics d;
  SourceFile src{path, {}, &d, {}};
  Json doc = load_json_file(path, src);
  d.throw_if_any();
  MeasuredFile f;
  f.file = path;
  ObjectReader r(doc, "", src);
  if (r.integer("plumb_measured_run", Need::required, 1, 1) != 1) {
    r.finish();
    d.throw_if_any();
  }
  f.setup.device = r.string("device", Need::required).value_or("");
  f.setup.driver = r.string("driver", Need::optional).value_or("");
  f.setup.date = r.string("date", Need::required).value_or("");
  f.setup.clock_mhz = static_cast<int>(r.integer("clock_mhz", Need::optional, 0, 100'000).value_or(0));
  f.setup.scenario = r.string("scenario", Need::required).value_or("");
  r.string("note", Need::optional);
  if (const Json* set = r.child("set", Need::optional)) {
    if (!set->is_array()) src.error("/set", "expected an array of key=value strings");
    else
      for (const Json& s : *set) {
        if (s.is_string()) f.setup.overrides.push_back(s.get<std::string>());
        else src.error("/set", fmt::format("expected key=value strings, found {}", json_brief(s)));
      }
  }
  if (const Json* v = r.child("virtual", Need::required)) f.setup.options = read_virtual_options(*v, "/virtual", src);
  if (const Json* sms = list_at(r, "sms_per_rank", "SM counts, one per rank"))
    for (std::size_t i = 0; i < sms->size(); ++i) {
      const Json& s = (*sms)[i];
      if (s.is_number_integer() && s.get<std::int64_t>() >= 0 && s.get<std::int64_t>() <= 100'000) f.run.sms.push_back(s.get<int>());
      else src.error(fmt::format("/sms_per_rank/{}", i), fmt::format("expected an SM count from 0 to 100000, found {}", json_brief(s)));
    }
  r.number("step_time_s", Need::required, 0, 1e6);
  if (const Json* steps = r.child("step_times_s", Need::required)) {
    for (std::size_t i = 0; steps->is_array() && i < steps->size(); ++i) {
      const Json& s = (*steps)[i];
      if (!s.is_number() || s.get<double>() <= 0) src.error(fmt::format("/step_times_s/{}", i), "expected a positive number of seconds");
      else f.run.step_seconds.push_back(s.get<double>());
    }
    if (f.run.step_seconds.empty()) src.error("/step_times_s", "expected at least one step time");
  }
  if (const Json* timeline = list_at(r, "timeline", "{\"rank\", \"index\", \"start_s\", \"end_s\"} ops"))
    for (std::size_t i = 0; i < timeline->size(); ++i) {
      ObjectReader t((*timeline)[i], fmt::format("/timeline/{}", i), src);
      MeasuredOp op;
      op.rank = static_cast<std::int32_t>(t.integer("rank", Need::required, 0, 1 << 20).value_or(0));
      op.index = static_cast<std::int32_t>(t.integer("index", Need::required, 0, 1 << 30).value_or(0));
      t.string("op", Need::optional);
      op.start = t.number("start_s", Need::required, 0, 1e6).value_or(0);
      op.end = t.number("end_s", Need::required, 0, 1e6).value_or(0);
      if (op.end < op.start) t.error("end_s", fmt::format("the op ends ({} s) before it starts ({} s)", op.end, op.start));
      t.finish();
      f.run.timeline.push_back(op);
    }
  if (const Json* spans = list_at(r, "gradient_reductions", "{\"rank\", \"start_s\", \"end_s\"} spans"))
    for (std::size_t i = 0; i < spans->size(); ++i) {
      ObjectReader t((*spans)[i], fmt::format("/gradient_reductions/{}", i), src);
      MeasuredSpan g;
      g.rank = static_cast<std::int32_t>(t.integer("rank", Need::required, 0, 1 << 20).value_or(0));
      g.start = t.number("start_s", Need::required, 0, 1e6).value_or(0);
      g.end = t.number("end_s", Need::required, 0, 1e6).value_or(0);
      if (g.end < g.start) t.error("end_s", fmt::format("the reduction ends ({} s) before it starts ({} s)", g.end, g.start));
      t.finish();
      f.run.gradient_reductions.push_back(g);
    }
  if (const Json* ops = list_at(r, "ops", "{\"op\", \"pass\", \"seconds\", \"runs\"} timings"))
    for (std::size_t i = 0; i < ops->size(); ++i) {
      const std::string at = fmt::format("/ops/{}", i);
      ObjectReader o((*ops)[i], at, src);
      MeasuredOpTime t;
      t.op = o.string("op", Need::required).value_or("");
      std::string pass = o.string("pass", Need::required).value_or("forward");
      auto p = std::find(std::begin(kPassNames), std::end(kPassNames), pass);
      if (p == std::end(kPassNames)) src.error(at + "/pass", fmt::format("\"{}\" is not forward, input_grad or weight_grad", pass));
      t.pass = static_cast<int>(p - std::begin(kPassNames)) % 3;
      t.seconds = o.number("seconds", Need::required, 0, 1e6).value_or(0);
      t.runs = o.integer("runs", Need::optional, 0, 1LL << 40).value_or(1);
      o.finish();
      f.run.op_times.push_back(t);
    }
  r.finish();
  d.throw_if_any();
  return f;
}

}  // namespace plumb
