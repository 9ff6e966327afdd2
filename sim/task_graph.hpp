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
  // Completes as soon as its dependencies do; with a stream it also waits for the stream's turn.
  TaskId add_marker(std::string_view label, StreamId stream = kNoStream);
  // `after` starts only once `before` has finished.
  void add_dependency(TaskId before, TaskId after);
  // Bytes the task's GPU allocates (>0) or frees (<0) when the task finishes (trace counters).
  void set_memory_delta(TaskId task, std::int64_t bytes);

  std::size_t size() const { return kind_.size(); }
  TaskKind kind(TaskId t) const { return kind_[t]; }
  StreamId stream(TaskId t) const { return stream_[t]; }
  Time work(TaskId t) const { return work_[t]; }
  std::int32_t hold_sms(TaskId t) const { return hold_sms_[t]; }
  double bytes(TaskId t) const { return bytes_[t]; }
  std::uint32_t src(TaskId t) const { return src_[t]; }
  std::uint32_t dst(TaskId t) const { return dst_[t]; }
  std::int64_t memory_delta(TaskId t) const { return memory_delta_.empty() ? 0 : memory_delta_[t]; }
  const std::string& label(TaskId t) const { return labels_[label_[t]]; }

  // Dependencies in compressed rows; valid after finalize().
  void finalize();
  bool finalized() const { return finalized_; }
  std::uint32_t predecessor_count(TaskId t) const { return pred_count_[t]; }
  const TaskId* successors_begin(TaskId t) const { return succ_.data() + succ_offset_[t]; }
  const TaskId* successors_end(TaskId t) const { return succ_.data() + succ_offset_[t + 1]; }

  // Bytes of graph state per task (for the memory-linearity benchmark).
  double bytes_per_task() const;

 private:
  TaskId push(TaskKind kind, std::string_view label, StreamId stream);
  std::uint32_t intern(std::string_view label);

  std::vector<TaskKind> kind_;
  std::vector<StreamId> stream_;
  std::vector<Time> work_;
  std::vector<std::int32_t> hold_sms_;
  std::vector<double> bytes_;
  std::vector<std::uint32_t> src_, dst_;
  std::vector<std::uint32_t> label_;
  std::vector<std::int64_t> memory_delta_;  // empty until the first delta is set
  std::vector<std::string> labels_;
  std::vector<std::pair<TaskId, TaskId>> edges_;
  std::vector<std::uint32_t> pred_count_;
  std::vector<std::uint64_t> succ_offset_;
  std::vector<TaskId> succ_;
  bool finalized_ = false;
};

}  // namespace plumb::sim
