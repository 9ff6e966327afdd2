#pragma once
// One training job: what a scenario file describes, fully resolved and checked.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "models/hardware/hardware.hpp"
#include "models/parallel/layout.hpp"
#include "models/scenario/framework.hpp"
#include "models/scenario/perturbations.hpp"
#include "models/spec/model_spec.hpp"
#include "models/spec/training.hpp"

namespace plumb {

struct Job {
  std::string name;
  std::string file;  // the scenario as the user named it
  ModelSpec model;
  Cluster cluster;
  ParallelLayout layout;
  TrainingSpec training;
  Framework framework;  // the software stack whose defaults the scenario took, if it names one
  Json plan;  // the scenario's "plan" section as written (read by models/plan_space), null if absent
  // A case of the published suite (scenarios/published/) says what was measured and where: its
  // "published" section as written (read by validate/published), null if absent.
  Json published;
  // GPUs that differ from the rest (slow, a degraded link, failing): read by the full-rank step only.
  std::vector<Perturbation> perturbations;

  std::int64_t microbatches() const { return plumb::microbatches(layout, training); }
};

// Reads a scenario file, applies command-line overrides ("parallel.pp=8"), checks everything and
// throws InputError listing every problem found.
Job load_scenario(const std::filesystem::path& path, const std::vector<std::string>& overrides = {});

// The job's training settings on another GPU: where its framework's defaults depend on the GPU's
// compute capability (and the scenario left them to it), those of `gpu`; nullopt with `why` when they
// do not read.
std::optional<TrainingSpec> training_on_gpu(const Job& job, const GpuSpec& gpu, std::string* why);

// Applies "a.b.c=value" to a JSON document (value parsed as JSON, else taken as a string);
// records the pointer in `src.overrides`. Bad syntax or a path through a non-object is reported.
void apply_override(Json& doc, const std::string& assignment, SourceFile& src);

}  // namespace plumb
