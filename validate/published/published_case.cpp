#include "validate/published/published_case.hpp"

#include <algorithm>
#include <array>
#include <fmt/format.h>

#include "models/input/catalogue.hpp"

namespace plumb {
namespace {

struct MetricInfo {
  Metric metric;
  std::string_view name;
  Dimension dim;
  bool memory;
};
constexpr std::array<MetricInfo, kMetrics> kMetricTable{{
    {Metric::step_time, "step_time", Dimension::time, false},
    {Metric::tokens_per_s_per_gpu, "tokens_per_s_per_gpu", Dimension::count, false},
    {Metric::model_tflops_per_gpu, "model_tflops_per_gpu", Dimension::flop_rate, false},
    {Metric::hardware_tflops_per_gpu, "hardware_tflops_per_gpu", Dimension::flop_rate, false},
    {Metric::mfu, "mfu", Dimension::count, false},
    {Metric::peak_memory, "peak_memory", Dimension::bytes, true},
    {Metric::first_stage_memory, "first_stage_memory", Dimension::bytes, true},
    {Metric::last_stage_memory, "last_stage_memory", Dimension::bytes, true},
}};

static_assert(kMetricTable.back().metric == Metric::last_stage_memory, "one row per Metric, in its order");
const MetricInfo& info(Metric m) { return kMetricTable[static_cast<std::size_t>(m)]; }

}  // namespace

std::string_view metric_name(Metric m) { return info(m).name; }
std::optional<Metric> metric_named(std::string_view name) {
  for (const MetricInfo& i : kMetricTable)
    if (i.name == name) return i.metric;
  return std::nullopt;
}
bool is_memory_metric(Metric m) { return info(m).memory; }
std::string_view memory_kind_name(MemoryKind k) { return k == MemoryKind::allocated ? "allocated" : "reserved"; }

PublishedCase read_case(const std::filesystem::path& file, const std::vector<std::string>& overrides) {
  PublishedCase c;
  c.job = load_scenario(file, overrides);
  c.id = file.stem().string();
  Diagnostics diagnostics;
  SourceFile src{file.string(), file.parent_path(), &diagnostics, {}};
  if (c.job.published.is_null()) {
    src.error("/published", "a case of the published suite needs a \"published\" section: "
                            "{\"group\", \"source\", \"measured\": {...}, \"assumptions\": [...]}");
    diagnostics.throw_if_any();
  }
  ObjectReader r(c.job.published, "/published", src);
  c.group = r.string("group", Need::required).value_or("");
  c.source = r.string("source", Need::required).value_or("");
  if (const Json* a = r.child("assumptions", Need::optional)) {
    if (!a->is_array()) src.error("/published/assumptions", "expected a list of strings, got " + json_brief(*a));
    else
      for (std::size_t i = 0; i < a->size(); ++i) {
        if ((*a)[i].is_string()) c.assumptions.push_back((*a)[i].get<std::string>());
        else src.error(fmt::format("/published/assumptions/{}", i), "expected a string, got " + json_brief((*a)[i]));
      }
  }
  if (const Json* m = r.child("measured", Need::required)) {
    ObjectReader mr(*m, "/published/measured", src);
    for (const MetricInfo& mi : kMetricTable) {
      std::optional<double> v = mi.metric == Metric::mfu ? mr.number(mi.name, Need::optional, 1e-6, 1.0)
                                                         : mr.quantity(mi.name, mi.dim, Need::optional);
      if (v) c.measured.push_back({mi.metric, *v});
    }
    const bool memory = std::any_of(c.measured.begin(), c.measured.end(), [](const Measured& x) { return is_memory_metric(x.metric); });
    auto kind = mr.choice<MemoryKind>("memory_kind", memory ? Need::required : Need::optional,
                                      {{"allocated", MemoryKind::allocated}, {"reserved", MemoryKind::reserved}});
    c.memory_kind = kind.value_or(MemoryKind::allocated);
    mr.finish();
    if (c.measured.empty() && m->is_object())
      src.error("/published/measured", fmt::format("names no measurement: give at least one of step_time, "
                                                   "tokens_per_s_per_gpu, model_tflops_per_gpu, hardware_tflops_per_gpu, mfu, peak_memory, first_stage_memory, last_stage_memory"));
  }
  r.finish();
  diagnostics.throw_if_any();
  return c;
}

std::filesystem::path published_dir() { return data_dir() / "scenarios" / "published"; }

std::vector<std::filesystem::path> case_files(const std::vector<std::string>& paths) {
  std::vector<std::filesystem::path> out;
  Diagnostics diagnostics;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      std::vector<std::filesystem::path> in_dir;
      for (const auto& e : std::filesystem::directory_iterator(p, ec))
        if (e.path().extension() == ".json") in_dir.push_back(e.path());
      std::sort(in_dir.begin(), in_dir.end());
      if (in_dir.empty()) diagnostics.add(p, "", "holds no case files (*.json)");
      out.insert(out.end(), in_dir.begin(), in_dir.end());
    } else if (std::filesystem::is_regular_file(p, ec)) {
      out.emplace_back(p);
    } else {
      // A bare case name picks the bundled case of that name.
      std::filesystem::path bundled = published_dir() / (p + ".json");
      if (std::filesystem::is_regular_file(bundled, ec)) out.push_back(bundled);
      else diagnostics.add(p, "", fmt::format("no such file, folder or bundled case (the bundled cases are in {})",
                                               published_dir().string()));
    }
  }
  diagnostics.throw_if_any();
  return out;
}

}  // namespace plumb
