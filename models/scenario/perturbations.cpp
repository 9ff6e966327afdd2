#include "models/scenario/perturbations.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

namespace plumb {
namespace {

// The global ranks of GPU `id`, or of node `id`'s GPUs, appended to `out`.
void append_gpus(std::vector<std::int64_t>& out, bool node, std::int64_t id, std::int64_t gpus, std::int64_t per_node) {
  if (!node) {
    out.push_back(id);
    return;
  }
  for (std::int64_t g = id * per_node; g < std::min(gpus, (id + 1) * per_node); ++g) out.push_back(g);
}

// The GPUs one entry names: "gpu": R, "gpus": [R, …], "node": N or "nodes": [N, …] (exactly one).
std::vector<std::int64_t> targets(ObjectReader& r, std::string& what, std::int64_t gpus, std::int64_t per_node) {
  const std::int64_t nodes = (gpus + per_node - 1) / per_node;
  std::vector<std::int64_t> out;
  int named = 0;
  for (const char* key : {"gpu", "gpus", "node", "nodes"}) {
    const Json* v = r.child(key, Need::optional);
    if (!v) continue;
    ++named;
    const bool node = key[0] == 'n';
    const std::int64_t limit = node ? nodes : gpus;
    const std::string one = node ? "node" : "GPU";
    std::vector<Json> items = v->is_array() ? std::vector<Json>(v->begin(), v->end()) : std::vector<Json>{*v};
    if (items.empty()) r.error(key, "an empty list touches no GPU: name at least one");
    for (std::size_t i = 0; i < items.size(); ++i) {
      const Json& item = items[i];
      const std::string where = v->is_array() ? fmt::format("{}/{}", r.pointer(key), i) : r.pointer(key);
      if (!item.is_number_integer() || item.get<std::int64_t>() < 0 || item.get<std::int64_t>() >= limit) {
        r.source().error(where, fmt::format("{} is not a {} of this job: expected an integer from 0 to {} (the job has {} {}s)",
                                            json_brief(item), one, limit - 1, limit, one));
        continue;
      }
      const std::int64_t id = item.get<std::int64_t>();
      what += fmt::format("{}{} {}", what.empty() ? "" : ", ", node ? "node" : "gpu", id);
      append_gpus(out, node, id, gpus, per_node);
    }
  }
  if (named != 1)
    r.source().error(r.pointer(), named == 0 ? "names no GPU: add \"gpu\": R, \"gpus\": [R, ...], \"node\": N or \"nodes\": [N, ...]"
                              : "names its GPUs more than once: keep one of \"gpu\", \"gpus\", \"node\", \"nodes\"");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

std::vector<Perturbation> read_perturbations(const Json& list, const std::string& pointer, const SourceFile& src,
                                             std::int64_t gpus, std::int64_t gpus_per_node) {
  std::vector<Perturbation> out;
  if (!list.is_array()) {
    src.error(pointer, fmt::format("expected a list of perturbations, e.g. [{{\"gpu\": 17, \"compute\": 0.8}}], not {}", json_brief(list)));
    return out;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    ObjectReader r(list[i], fmt::format("{}/{}", pointer, i), src);
    if (!r.is_object()) continue;
    Perturbation p;
    p.gpus = targets(r, p.what, gpus, std::max<std::int64_t>(1, gpus_per_node));
    // Speeds: a GPU at 1% of its profile or 100× faster is a typo, not a scenario.
    p.compute = r.number("compute", Need::optional, 0.01, 100).value_or(1.0);
    p.network = r.number("network", Need::optional, 0.01, 1).value_or(1.0);  // a link runs at most at the fabric's speed
    p.fails_at = r.quantity("fails_at", Dimension::time, Need::optional);
    r.string("note", Need::optional);
    if (!r.has("compute") && !r.has("network") && !r.has("fails_at"))
      src.error(r.pointer(), "changes nothing: give \"compute\" (speed relative to the GPU profile, 0.8 = 20% slower), "
                         "\"network\" (link bandwidth relative to the fabric's) or \"fails_at\" (\"2 s\": the time its GPUs stop)");
    out.push_back(std::move(p));
  }
  return out;
}

Perturbation perturbation_from_flag(std::string_view kind, std::string_view value, std::int64_t gpus, std::int64_t gpus_per_node) {
  const bool fail = kind == "fail-node", node = kind != "slow-gpu";
  const char sep = fail ? '@' : '=';
  const std::string expected = fail ? "NODE@TIME, e.g. 5@2s" : node ? "NODE=FACTOR, e.g. 2=0.5" : "GPU=FACTOR, e.g. 17=0.8";
  const std::size_t at = value.find(sep);
  if (at == std::string_view::npos) throw std::invalid_argument(fmt::format("--{} {}: expected {}", kind, value, expected));
  const std::string id_text(value.substr(0, at)), rest(value.substr(at + 1));
  const std::int64_t per_node = std::max<std::int64_t>(1, gpus_per_node), limit = node ? (gpus + per_node - 1) / per_node : gpus;
  std::int64_t id = -1;
  try {
    std::size_t used = 0;
    id = std::stoll(id_text, &used);
    if (used != id_text.size()) id = -1;
  } catch (const std::exception&) {
    id = -1;
  }
  if (id < 0 || id >= limit)
    throw std::invalid_argument(fmt::format("--{} {}: \"{}\" is not a {} of this job (0 to {})", kind, value, id_text, node ? "node" : "GPU", limit - 1));
  Perturbation p;
  p.what = fmt::format("{} {}", node ? "node" : "gpu", id);
  append_gpus(p.gpus, node, id, gpus, per_node);
  std::string why;
  if (fail) {
    const std::optional<double> t = parse_quantity(rest, Dimension::time, &why);
    if (!t || !(*t > 0)) throw std::invalid_argument(fmt::format("--{} {}: {}; expected {}", kind, value, why.empty() ? "the time must be above 0" : why, expected));
    p.fails_at = *t;
    return p;
  }
  double factor = 0;
  try {
    std::size_t used = 0;
    factor = std::stod(rest, &used);
    if (used != rest.size()) factor = 0;
  } catch (const std::exception&) {
    factor = 0;
  }
  const double most = node ? 1.0 : 100.0;
  if (!(factor >= 0.01 && factor <= most))
    throw std::invalid_argument(fmt::format("--{} {}: the factor must be a number from 0.01 to {} ({})", kind, value, most,
                                            node ? "a link runs at most at the fabric's speed" : "the speed relative to the GPU profile"));
  (node ? p.network : p.compute) = factor;
  return p;
}

std::vector<GpuCondition> gpu_conditions(const std::vector<Perturbation>& perturbations, std::int64_t gpus) {
  std::vector<GpuCondition> out(static_cast<std::size_t>(gpus));
  for (const Perturbation& p : perturbations)
    for (std::int64_t g : p.gpus) {
      GpuCondition& c = out[static_cast<std::size_t>(g)];
      c.compute *= p.compute;
      c.network *= p.network;
      if (p.fails_at) c.fails_at = c.fails_at ? std::min(*c.fails_at, *p.fails_at) : *p.fails_at;
    }
  return out;
}

}  // namespace plumb
