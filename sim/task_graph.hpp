#pragma once
// A task graph for the engine: compute tasks (fixed work on a stream, optionally holding SMs),
// transfers (bytes between two topology endpoints, on a stream) and markers (instantaneous joins).
// Stored as parallel arrays with dependencies in compressed rows, so a million tasks stay small.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/time.hpp"

namespace plumb::sim {

using TaskId = std::uint32_t;
using StreamId = std::int32_t;
inline constexpr StreamId kNoStream = -1;

enum class TaskKind : std::uint8_t { compute, transfer, marker };

class TaskGraph {
 public:
  // A compute task of `work` picoseconds at the full SM count of its GPU. With hold_sms > 0 it
  // runs on exactly that many SMs for exactly `work` and takes them from its GPU's pool while it
  // runs; with 0 it shares the pool's remaining SMs with the GPU's other such tasks.
  TaskId add_compute(std::string_view label, StreamId stream, Time work, std::int32_t hold_sms = 0);
  // A transfer of `bytes` from topology vertex `src` to `dst`, issued on `stream`; it may hold SMs
  // (communication kernels) while it runs.
  TaskId add_transfer(std::string_view label, StreamId stream, std::uint32_t src, std::uint32_t dst, double bytes,
                      std::int32_t hold_sms = 0);
  // Marks a compute task as time on its GPU's network port (its `work` is how long it takes alone):
  // such tasks running at once on one GPU share the port equally, each progressing at 1/n — NIC
  // contention between collectives of different groups (an EP all-to-all beside a DP reduce-scatter).
  void set_shares_port(TaskId task);
  // Marks a compute task as work off the SMs (copies on the copy engines): it takes exactly its `work`
  // and leaves the SMs to the GPU's other tasks.
  void set_off_sms(TaskId task);
  // Completes as soon as its dependencies do; with a stream it also waits for the stream's turn.
  TaskId add_marker(std::string_view label, StreamId stream = kNoStream);
  // `after` starts only once `before` has finished.
  void add_dependency(TaskId before, TaskId after);
  // Bytes the task's GPU allocates (>0) or frees (<0) when the task finishes (trace counters).
  void set_memory_delta(TaskId task, std::int64_t bytes);

  std::size_t size() const { return tasks_.size(); }
  TaskKind kind(TaskId t) const { return tasks_[t].kind; }
  StreamId stream(TaskId t) const { return tasks_[t].stream; }
  Time work(TaskId t) const { return tasks_[t].kind == TaskKind::compute ? tasks_[t].work : 0; }
  std::int32_t hold_sms(TaskId t) const { return tasks_[t].hold_sms; }
  bool shares_port(TaskId t) const { return tasks_[t].shares_port; }
  bool off_sms(TaskId t) const { return tasks_[t].off_sms; }
  double bytes(TaskId t) const { return transfer(t).bytes; }
  std::uint32_t src(TaskId t) const { return transfer(t).src; }
  std::uint32_t dst(TaskId t) const { return transfer(t).dst; }
  std::int64_t memory_delta(TaskId t) const { return memory_delta_.empty() ? 0 : memory_delta_[t]; }
  const std::string& label(TaskId t) const { return labels_[tasks_[t].label]; }

  // Dependencies in compressed rows; valid after finalize().
  void finalize();
  bool finalized() const { return finalized_; }
  std::uint32_t predecessor_count(TaskId t) const { return pred_count_[t]; }
  const TaskId* successors_begin(TaskId t) const { return succ_.data() + succ_offset_[t]; }
  const TaskId* successors_end(TaskId t) const { return succ_.data() + succ_offset_[t + 1]; }

  // Streams used: one more than the highest stream id (valid after finalize()).
  std::size_t stream_count() const { return stream_offset_.empty() ? 0 : stream_offset_.size() - 1; }
  // Stream s's tasks in the order it runs them: positions [stream_begin(s), stream_begin(s + 1)) of
  // stream_task (valid after finalize()).
  std::uint64_t stream_begin(std::size_t s) const { return stream_offset_[s]; }
  TaskId stream_task(std::uint64_t position) const { return stream_tasks_[position]; }
  bool has_transfers() const { return !transfers_.empty(); }

  // Bytes of graph state per task (for the memory-linearity benchmark).
  double bytes_per_task() const;

 private:
  // What the engine reads when it starts a task, in one record (one cache line holds two).
  struct Record {
    Time work = 0;  // compute: picoseconds at full speed; transfer: index into transfers_
    StreamId stream = kNoStream;
    std::int32_t hold_sms = 0;
    std::uint32_t label = 0;
    TaskKind kind = TaskKind::marker;
    bool shares_port = false;
    bool off_sms = false;
  };
  struct Transfer {
    double bytes = 0;
    std::uint32_t src = 0, dst = 0;
  };
  const Transfer& transfer(TaskId t) const { return transfers_[static_cast<std::size_t>(tasks_[t].work)]; }
  TaskId push(TaskKind kind, std::string_view label, StreamId stream);
  std::uint32_t intern(std::string_view label);

  std::vector<Record> tasks_;
  std::vector<Transfer> transfers_;
  std::vector<std::int64_t> memory_delta_;  // empty until the first delta is set
  std::vector<std::string> labels_;
  std::vector<std::pair<TaskId, TaskId>> edges_;
  std::vector<std::uint32_t> pred_count_;
  std::vector<std::uint64_t> succ_offset_;
  std::vector<TaskId> succ_;
  std::vector<std::uint64_t> stream_offset_;
  std::vector<TaskId> stream_tasks_;
  bool finalized_ = false;
};

}  // namespace plumb::sim
