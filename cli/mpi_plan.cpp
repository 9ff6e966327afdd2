// plumb plan --mpi: every MPI rank evaluates its shard of the space (rank r of N takes every N-th
// layout), rank 0 gathers the partial results and merges them exactly as plumb merge does.
#include <mpi.h>

#include <fmt/format.h>
#include <iostream>

#include "cli/mpi_plan.hpp"
#include "cli/report/plan_report.hpp"

namespace plumb::cli {

std::optional<PlanOutcome> plan_over_mpi(const Job& base, const PlanSpace& space, PlanOptions options) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) MPI_Init(nullptr, nullptr);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  PlanOptions shard = options;
  shard.shard = static_cast<std::uint64_t>(rank);
  shard.shards = static_cast<std::uint64_t>(size);
  shard.simulate = false;
  if (rank != 0) shard.progress = nullptr;
  PlanOutcome mine = run_plan(base, space, shard);
  std::string text = partial_json(base.name, mine, shard.shard, shard.shards, space.size()).dump();
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string all;
  if (rank == 0) {
    int total = 0;
    for (int i = 0; i < size; ++i) {
      offsets[static_cast<std::size_t>(i)] = total;
      total += lengths[static_cast<std::size_t>(i)];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::optional<PlanOutcome> result;
  if (rank == 0) {
    std::vector<PlanOutcome> parts;
    for (int i = 0; i < size; ++i) {
      std::string part = all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(i)]),
                                    static_cast<std::size_t>(lengths[static_cast<std::size_t>(i)]));
      parts.push_back(read_partial(Json::parse(part), fmt::format("MPI rank {}", i), space.size()));
    }
    result = merge_plans(base, space, std::move(parts), options);
  }
  MPI_Finalize();
  return result;
}

}  // namespace plumb::cli
