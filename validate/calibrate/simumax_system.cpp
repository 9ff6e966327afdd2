#include "validate/calibrate/simumax_system.hpp"

#include <charconv>
#include <fmt/format.h>
#include <map>
#include <tuple>

#include "models/input/diagnostics.hpp"

namespace plumb {

namespace {

// "b=1, m=4096, k=8192, n=57344, layout=TN, accumulate=False, out_dtype=bf16" as its fields.
std::map<std::string, std::string> shape_fields(const std::string& key) {
  std::map<std::string, std::string> fields;
  std::size_t start = 0;
  while (start <= key.size()) {
    std::size_t end = key.find(',', start);
    if (end == std::string::npos) end = key.size();
    std::string item = key.substr(start, end - start);
    const std::size_t first = item.find_first_not_of(' ');
    item = first == std::string::npos ? std::string() : item.substr(first);
    const std::size_t eq = item.find('=');
    if (eq != std::string::npos) fields[item.substr(0, eq)] = item.substr(eq + 1);
    start = end + 1;
  }
  return fields;
}

// One table of shapes and their efficiencies (a section of accelerator.op), its errors at `pointer`.
struct Table {
  const SourceFile& src;
  std::string pointer;
  double peak = 0;  // FLOP/s the efficiencies are shares of

  // A positive integer field of a row's key; an error naming the key where it is missing or not one.
  double count(const std::map<std::string, std::string>& f, const std::string& name, const std::string& row) const {
    auto it = f.find(name);
    std::int64_t v = 0;
    if (it != f.end()) {
      const char* end = it->second.data() + it->second.size();
      auto [p, ec] = std::from_chars(it->second.data(), end, v);
      if (ec == std::errc() && p == end && v >= 1 && v <= 1'000'000'000) return static_cast<double>(v);
    }
    src.error(json_pointer_append(pointer, row),
              fmt::format("the shape's \"{}\" must be a whole number from 1 to 10^9, as SimuMax writes it (\"{}=4096\")", name, name));
    return 0;
  }
  std::string word(const std::map<std::string, std::string>& f, const std::string& name) const {
    auto it = f.find(name);
    return it == f.end() ? std::string() : it->second;
  }
  // The efficiency of `row` (a share of the peak), or 0 after an error.
  double efficiency(const Json& value, const std::string& row) const {
    if (value.is_number() && value.get<double>() > 0 && value.get<double>() <= 1.5) return value.get<double>();
    src.error(json_pointer_append(pointer, row), fmt::format("expected an efficiency above 0 and at most 1.5 (a share of \"tflops\"), got {}",
                                                             json_brief(value)));
    return 0;
  }
};

// accelerator.op.<section>: its "tflops" and its accurate_efficient_factor table, or nullptr when absent
// or empty (SimuMax writes efficient_factor 0 and no table for kernels it did not measure).
const Json* measured_table(const Json& op, const std::string& section, double& peak, const SourceFile& src) {
  if (!op.contains(section) || !op[section].is_object()) return nullptr;
  const Json& s = op[section];
  if (!s.contains("accurate_efficient_factor")) return nullptr;
  const Json& t = s["accurate_efficient_factor"];
  const std::string at = "/accelerator/op/" + section;
  if (!t.is_object()) {
    src.error(at + "/accurate_efficient_factor", "expected an object of shape → efficiency");
    return nullptr;
  }
  if (t.empty()) return nullptr;
  if (!s.contains("tflops") || !s["tflops"].is_number() || s["tflops"].get<double>() <= 0 || s["tflops"].get<double>() > 1e6) {
    src.error(at + "/tflops", "expected the peak the efficiencies are shares of, in TFLOP/s (e.g. 2250.0)");
    return nullptr;
  }
  peak = s["tflops"].get<double>() * 1e12;
  return &t;
}

// Dense GEMMs (TE general_gemm): TN is the forward (m tokens, k in, n out), NN the input gradient
// (m tokens, k out, n in), NT the weight gradient (m out, k tokens, n in; plumb's m is the weight's
// input side: in × out × tokens). Weight gradients written in bf16 are not the fp32 accumulation the
// runs used: left out, counted.
void read_dense(const Json& table, const Table& t, MathDtype dtype, Measurements& m) {
  std::size_t bf16_weight_gradients = 0;
  for (const auto& [key, value] : table.items()) {
    const auto f = shape_fields(key);
    const double b = t.count(f, "b", key), rows = t.count(f, "m", key), n = t.count(f, "n", key), k = t.count(f, "k", key);
    const double e = t.efficiency(value, key);
    const std::string layout = t.word(f, "layout");
    if (b == 0 || rows == 0 || n == 0 || k == 0 || e == 0) continue;
    if (layout != "TN" && layout != "NN" && layout != "NT") {
      t.src.error(json_pointer_append(t.pointer, key), "the shape's \"layout\" must be TN (forward), NN (input gradient) or NT (weight gradient)");
      continue;
    }
    GemmMeasurement g;
    g.dtype = dtype;
    g.weight_gradient = layout == "NT";
    if (g.weight_gradient && t.word(f, "out_dtype") != "fp32") {
      ++bf16_weight_gradients;
      continue;
    }
    g.m = g.weight_gradient ? n : rows;
    g.n = g.weight_gradient ? rows : n;
    g.k = k;
    g.groups = b;
    g.seconds = 2 * b * rows * n * k / (e * t.peak);
    m.gemm.push_back(g);
  }
  if (bf16_weight_gradients)
    m.left_out.push_back(fmt::format("{} weight-gradient GEMMs of {} written in bf16 (plumb fits the fp32-accumulating ones)",
                                     bf16_weight_gradients, t.pointer));
}

// Grouped expert GEMMs: ng groups of M tokens × N out × K in, stage fwd, bwd_grad_act or bwd_grad_w.
void read_grouped(const Json& table, const Table& t, Measurements& m) {
  for (const auto& [key, value] : table.items()) {
    const auto f = shape_fields(key);
    const double groups = t.count(f, "ng", key), rows = t.count(f, "M", key), n = t.count(f, "N", key), k = t.count(f, "K", key);
    const double e = t.efficiency(value, key);
    const std::string stage = t.word(f, "stage"), dtype = t.word(f, "dtype");
    if (groups == 0 || rows == 0 || n == 0 || k == 0 || e == 0) continue;
    if ((stage != "fwd" && stage != "bwd_grad_act" && stage != "bwd_grad_w") || (dtype != "bf16" && dtype != "fp8")) {
      t.src.error(json_pointer_append(t.pointer, key),
                  "the shape's \"stage\" must be fwd, bwd_grad_act or bwd_grad_w and its \"dtype\" bf16 or fp8");
      continue;
    }
    GemmMeasurement g;
    g.dtype = dtype == "fp8" ? MathDtype::fp8 : MathDtype::bf16;
    g.groups = groups;
    g.weight_gradient = stage == "bwd_grad_w";
    if (stage == "fwd") g.m = rows, g.n = n, g.k = k;
    else if (stage == "bwd_grad_act") g.m = rows, g.n = k, g.k = n;
    else g.m = k, g.n = n, g.k = rows;
    g.seconds = 2 * groups * rows * n * k / (e * t.peak);
    m.gemm.push_back(g);
  }
}

}  // namespace

bool is_simumax_system(const Json& doc) {
  return doc.is_object() && doc.contains("sys_name") && doc.contains("accelerator") && doc["accelerator"].is_object() &&
         doc["accelerator"].contains("op");
}

Measurements read_simumax_system(const Json& doc, const std::string& file) {
  Diagnostics d;
  SourceFile src{file, {}, &d, {}};
  Measurements m;
  m.file = file;
  m.sustained = true;
  m.device = fmt::format("SimuMax system {}", doc["sys_name"].is_string() ? doc["sys_name"].get<std::string>() : json_brief(doc["sys_name"]));
  m.date = "date not recorded";
  const Json& op = doc["accelerator"]["op"];
  if (!op.is_object()) {
    src.error("/accelerator/op", "expected SimuMax's object of kernel tables (matmul, group_matmul, …)");
    d.throw_if_any();
  }
  for (const auto& [section, dtype, grouped] : {std::tuple{"matmul", MathDtype::bf16, false}, std::tuple{"fp8_matmul", MathDtype::fp8, false},
                                                std::tuple{"group_matmul", MathDtype::bf16, true},
                                                std::tuple{"fp8_group_matmul", MathDtype::fp8, true}}) {
    Table t{src, fmt::format("/accelerator/op/{}/accurate_efficient_factor", section)};
    const Json* table = measured_table(op, section, t.peak, src);
    if (!table) continue;
    if (grouped) read_grouped(*table, t, m);
    else read_dense(*table, t, dtype, m);
  }
  for (const auto& [section, _] : op.items())
    if (section != "matmul" && section != "fp8_matmul" && section != "group_matmul" && section != "fp8_group_matmul")
      m.left_out.push_back(fmt::format("/accelerator/op/{} (not a GEMM table: plumb reads SimuMax's GEMM measurements only; "
                                       "its attention rows count FLOPs their own way)",
                                       section));
  for (const char* section : {"/accelerator/bandwidth", "/networks"})
    if (doc.contains(nlohmann::json::json_pointer(section)))
      m.left_out.push_back(fmt::format("{} (bandwidths SimuMax assumes or fits its own way; calibrate HBM and fabrics from plumb's runs "
                                       "and nccl-tests logs)",
                                       section));
  d.throw_if_any();
  return m;
}

}  // namespace plumb
