#pragma once
// The training step as tests build it: a bundled scenario read with overrides, its costs, simulated
// step and report, and the relative difference the step tests bound.
#include <cmath>
#include <string>
#include <vector>

#include "cli/report/step_report.hpp"
#include "models/costs/step_costs.hpp"
#include "models/input/catalogue.hpp"

namespace plumb::test {

inline Job scenario(const std::string& name, const std::vector<std::string>& overrides = {}) {
  return load_scenario(data_dir() / "scenarios" / name, overrides);
}

struct Run {
  StepCosts costs;
  StepSimulation sim;
  StepReport report;
};

inline Run run(const Job& job) {
  Run r;
  r.costs = step_costs(job);
  r.sim = simulate_step(job, r.costs);
  r.report = make_step_report(job, r.sim, r.costs);
  return r;
}

inline double relative(double a, double b) { return std::abs(a / b - 1); }

// Model stage `index`'s costs under `job`.
inline StageCost stage_costs(const Job& job, std::size_t index = 0) { return step_costs(job).stages.at(index); }

}  // namespace plumb::test
