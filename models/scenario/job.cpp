#include "models/scenario/job.hpp"

#include <fmt/format.h>

#include "models/input/catalogue.hpp"
#include "models/spec/model_reader.hpp"
#include "models/parallel/placement.hpp"

namespace plumb {

void apply_override(Json& doc, const std::string& assignment, SourceFile& src) {
  std::string flag = "--set " + assignment;
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    src.diagnostics->add("--set", "", fmt::format("\"{}\" is not key=value (e.g. --set parallel.pp=8)", assignment));
    return;
  }
  std::string path = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  if (json_nesting_beyond(text, kMaxJsonNesting)) {
    src.diagnostics->add("--set", "", fmt::format("the value of {} nests deeper than {} levels", path, kMaxJsonNesting));
    return;
  }
  Json value = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) value = text;  // bare words are strings: --set parallel.schedule=1f1b
  Json* node = &doc;
  std::string pointer;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = path.find('.', start);
    std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (key.empty()) {
      src.diagnostics->add("--set", "", fmt::format("\"{}\" has an empty key", path));
      return;
    }
    if (!node->is_object()) {
      src.error(pointer, fmt::format("cannot set \"{}\": {} is {}, not an object ({})", path, pointer,
                                     json_brief(*node), flag));
      return;
    }
    pointer = json_pointer_append(pointer, key);
    if (dot == std::string::npos) {
      (*node)[key] = value;
      src.overrides[pointer] = flag;
      return;
    }
    node = &(*node)[key];
    if (node->is_null()) *node = Json::object();
    start = dot + 1;
  }
}

namespace {

// The compute capability of the scenario's GPU, which a framework's defaults may depend on; empty where
// the cluster does not read (its errors are reported when it is read in turn) or the profile gives none.
std::string gpu_compute_capability(const Json& doc, const SourceFile& src) {
  if (!doc.is_object() || !doc.contains("cluster")) return {};
  Diagnostics scratch;
  SourceFile probe = src;
  probe.diagnostics = &scratch;
  std::optional<Cluster> cluster = read_cluster(doc.at("cluster"), "/cluster", probe);
  return cluster ? cluster->gpu.compute_capability : std::string();
}

}  // namespace

Job load_scenario(const std::filesystem::path& path, const std::vector<std::string>& overrides) {
  Diagnostics diagnostics;
  SourceFile src{path.string(), path.parent_path(), &diagnostics, {}};
  Json doc = load_json_file(path, src);
  diagnostics.throw_if_any();
  for (const std::string& assignment : overrides) apply_override(doc, assignment, src);
  diagnostics.throw_if_any();
  // Only a framework's defaults can depend on the GPU: the cluster is read ahead for them alone.
  const bool names_framework = doc.is_object() && doc.contains("framework");
  Framework framework = apply_framework(doc, src, names_framework ? gpu_compute_capability(doc, src) : std::string());
  diagnostics.throw_if_any();

  Job job;
  job.framework = std::move(framework);
  job.file = path.string();
  std::optional<ModelSpec> model;
  std::optional<Cluster> cluster;
  const Json* perturbations = nullptr;
  {
    ObjectReader r(doc, "", src);
    job.name = r.string("name", Need::optional).value_or(path.stem().string());
    r.string("description", Need::optional);
    r.child("framework", Need::optional);  // read by apply_framework
    if (const Json* m = r.child("model", Need::required)) model = read_model(*m, "/model", src);
    if (const Json* c = r.child("cluster", Need::required)) cluster = read_cluster(*c, "/cluster", src);
    if (const Json* p = r.child("parallel", Need::required)) {
      ObjectReader pr(*p, "/parallel", src);
      job.layout = read_parallel(pr);
    }
    if (const Json* t = r.child("training", Need::required)) {
      ObjectReader tr(*t, "/training", src);
      job.training = read_training(tr);
    }
    if (const Json* p = r.child("plan", Need::optional)) job.plan = *p;
    if (const Json* p = r.child("published", Need::optional)) job.published = *p;
    perturbations = r.child("perturbations", Need::optional);
  }
  diagnostics.throw_if_any();
  job.model = std::move(*model);
  job.cluster = std::move(*cluster);
  finalize_layout(job.layout, job.model, job.cluster, job.training, src);
  std::string why;
  if (diagnostics.empty() && !Placement::make(job.layout, job.cluster.fabric.gpus_per_node, &why))
    src.error("/parallel/order", why);
  if (perturbations && diagnostics.empty())
    job.perturbations = read_perturbations(*perturbations, "/perturbations", src, job.layout.gpus(), job.cluster.fabric.gpus_per_node);
  diagnostics.throw_if_any();
  return job;
}

std::optional<TrainingSpec> training_on_gpu(const Job& job, const GpuSpec& gpu, std::string* why) {
  if (!job.framework.depends_on_gpu() || gpu.compute_capability == job.cluster.gpu.compute_capability) return job.training;
  const Json training = training_on_capability(job.framework, gpu.compute_capability);
  Diagnostics diagnostics;
  SourceFile src{job.file, std::filesystem::path(job.file).parent_path(), &diagnostics, {}};
  ObjectReader r(training, "/training", src);
  TrainingSpec t = read_training(r);
  r.finish();
  if (!diagnostics.empty()) {
    *why = fmt::format("/training: on {} (compute capability {}) the framework's defaults do not read: {}", gpu.name,
                       gpu.compute_capability.empty() ? "not given" : gpu.compute_capability, diagnostics.list().front().message);
    return std::nullopt;
  }
  return t;
}

}  // namespace plumb
