#include "sim/failure.hpp"

#include <stdexcept>

namespace plumb::sim {

std::vector<Stall> stalls_after_failures(const TaskGraph& graph, const Machine& machine, const SimResult& result,
                                         const std::vector<std::optional<Time>>& fails_at) {
  if (!graph.finalized()) throw std::logic_error("stalls_after_failures: the graph is not finalized");
  const std::size_t n = graph.size();
  // Each task's place in its stream's order: the next task there waits for it.
  std::vector<TaskId> stream_next(n, kNoTask);
  std::vector<std::uint32_t> waiting(n);
  for (TaskId t = 0; t < n; ++t) waiting[t] = graph.predecessor_count(t);
  for (std::size_t s = 0; s < graph.stream_count(); ++s)
    for (std::uint64_t i = graph.stream_begin(s); i + 1 < graph.stream_begin(s + 1); ++i) {
      stream_next[graph.stream_task(i)] = graph.stream_task(i + 1);
      ++waiting[graph.stream_task(i + 1)];
    }
  auto gpu_of = [&](TaskId t) { return graph.stream(t) == kNoStream ? -1 : machine.gpu_of(graph.stream(t)); };
  std::vector<Stall> out(fails_at.size());
  for (std::size_t g = 0; g < fails_at.size(); ++g)
    if (fails_at[g]) out[g] = {*fails_at[g], kNoTask, true};
  // In dependency order: a task is dead if its GPU failed before it ended, or anything it waits on is.
  std::vector<char> dead(n, 0);
  std::vector<TaskId> ready;
  for (TaskId t = 0; t < n; ++t)
    if (waiting[t] == 0) ready.push_back(t);
  while (!ready.empty()) {
    const TaskId t = ready.back();
    ready.pop_back();
    const int g = gpu_of(t);
    if (!dead[t] && g >= 0 && fails_at[static_cast<std::size_t>(g)] && result.end[t] > *fails_at[static_cast<std::size_t>(g)]) dead[t] = 1;
    if (dead[t] && g >= 0 && !out[static_cast<std::size_t>(g)].failed && result.start[t] < out[static_cast<std::size_t>(g)].stops)
      out[static_cast<std::size_t>(g)] = {result.start[t], t, false};
    auto release = [&](TaskId next) {
      if (dead[t]) dead[next] = 1;
      if (--waiting[next] == 0) ready.push_back(next);
    };
    for (const TaskId* s = graph.successors_begin(t); s != graph.successors_end(t); ++s) release(*s);
    if (stream_next[t] != kNoTask) release(stream_next[t]);
  }
  return out;
}

}  // namespace plumb::sim
