#pragma once
// `plumb plan` output: the ranked table, CSV, JSON, SVG plots (Pareto frontier; where the time goes
// in the best layouts), Megatron-LM flags for a layout, and the partial files shards exchange.
#include <optional>
#include <string>

#include "models/input/json_reader.hpp"
#include "models/plan/planner.hpp"

namespace plumb {

// Where the scenario's own layout landed in the ranking (1-based), if it was feasible.
std::optional<std::size_t> scenario_rank(const Job& base, const PlanOutcome& o);

std::string plan_table(const Job& base, const PlanSpace& space, const PlanOutcome& o, std::size_t rows);
std::string plan_csv(const PlanOutcome& o);
Json plan_json(const Job& base, const PlanSpace& space, const PlanOutcome& o, std::size_t rows);
std::string plan_svg(const std::string& scenario, const PlanOutcome& o);
// Why nothing fits or qualifies, with the nearest misses.
std::string infeasible_explanation(const PlanOutcome& o);

// Megatron-LM's command-line flags for the job's layout (parallel sizes, virtual stages,
// recomputation, sequence parallelism, distributed optimizer, precision).
std::string megatron_flags(const Job& job);
// The layout as torchtitan settings (TOML sections to merge into a train config), with a comment for
// anything torchtitan cannot express (ZeRO-1/2, schedules it lacks, recomputation lists).
std::string torchtitan_toml(const Job& job);

// A shard's outcome as a file, and back (throws InputError naming the file on a bad one).
Json partial_json(const std::string& scenario, const PlanOutcome& o, std::uint64_t shard, std::uint64_t shards, std::uint64_t space_size);
PlanOutcome read_partial(const Json& doc, const std::string& file, std::uint64_t space_size);

}  // namespace plumb
