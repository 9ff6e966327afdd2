#pragma once
// The discrete-event engine: runs a task graph on a machine (and, for transfers, a topology with a
// flow-level network). Events are ordered by (time, sequence number), so equal-time events run in a
// fixed order and two runs are bit-identical. When nothing can run and tasks remain it stops with a
// DeadlockError naming what waits for what.
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "sim/machine.hpp"
#include "sim/task_graph.hpp"
#include "sim/topology.hpp"

namespace plumb::sim {

class DeadlockError : public std::runtime_error {
 public:
  DeadlockError(std::string message, std::vector<TaskId> waiting)
      : std::runtime_error(std::move(message)), waiting_(std::move(waiting)) {}
  const std::vector<TaskId>& waiting() const { return waiting_; }

 private:
  std::vector<TaskId> waiting_;
};

inline constexpr TaskId kNoTask = std::numeric_limits<TaskId>::max();

struct MemorySample {
  Time time;
  std::int64_t bytes;
};

struct SimResult {
  Time makespan = 0;
  std::vector<Time> start, end;   // per task
  // Per task, what it waited for last: the dependency or the earlier task on its stream whose end
  // let it start (kNoTask when it could start at time 0). The chain of these is the critical path.
  std::vector<TaskId> binding;
  TaskId last_finished = kNoTask;  // the task whose end closed the run (latest in event order)
  std::vector<Time> stream_busy;  // per stream, time with a task running (a transfer: until its last byte leaves)
  std::vector<double> link_bytes; // per directed link
  std::vector<std::vector<MemorySample>> memory;  // per GPU, after every change
  std::vector<std::int64_t> peak_memory;          // per GPU
  std::uint64_t events = 0;
  std::uint64_t rate_updates = 0;  // network max-min recomputations
  std::uint64_t flows_refilled = 0;  // flows those recomputations filled again (the others kept their rates)
};

// `topology` is needed only when the graph has transfers; GPUs then need topology vertices.
SimResult simulate(const TaskGraph& graph, const Machine& machine, const Topology* topology = nullptr);

// The chain of tasks that set the makespan, first to last.
std::vector<TaskId> critical_path(const SimResult& result);

}  // namespace plumb::sim
