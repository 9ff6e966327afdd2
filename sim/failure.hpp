#pragma once
// What a GPU that stops for good does to a finished run: every task it had not finished by then never
// ends, and neither does anything that waits on one of those (through a dependency or its stream's
// order). Each GPU stops where its first such task would have started: a synchronous job stalls at
// the first collective that needs a failed peer. The times before the failure are the run's own (what
// already ran is not changed by what comes later).
#include <optional>
#include <vector>

#include "sim/engine.hpp"

namespace plumb::sim {

struct Stall {
  Time stops = kNever;          // when the GPU does its last work (kNever: it finishes its part)
  TaskId first_blocked = kNoTask;  // the first task it can never run (kNoTask: failed itself, or finished)
  bool failed = false;          // it failed itself (stops at its failure time)
};

// `fails_at`: per GPU of `machine`, when it fails (nullopt: it does not).
std::vector<Stall> stalls_after_failures(const TaskGraph& graph, const Machine& machine, const SimResult& result,
                                         const std::vector<std::optional<Time>>& fails_at);

}  // namespace plumb::sim
