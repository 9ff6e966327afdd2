#pragma once
// plumb plan --mpi (built when MPI is found): the search split over MPI ranks, merged on rank 0.
#include <optional>

#include "models/plan/planner.hpp"

namespace plumb::cli {

// Rank 0 gets the merged outcome; the other ranks get nullopt and should print nothing.
std::optional<PlanOutcome> plan_over_mpi(const Job& base, const PlanSpace& space, PlanOptions options);

}  // namespace plumb::cli
