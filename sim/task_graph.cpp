#include "sim/task_graph.hpp"

#include <algorithm>
#include <stdexcept>

namespace plumb::sim {

std::uint32_t TaskGraph::intern(std::string_view label) {
  // Graphs reuse a handful of labels ("F", "B", "all-to-all"); a linear scan of recent ones suffices.
  for (std::size_t i = labels_.size(); i-- > 0 && labels_.size() - i <= 64;)
    if (labels_[i] == label) return static_cast<std::uint32_t>(i);
  labels_.emplace_back(label);
  return static_cast<std::uint32_t>(labels_.size() - 1);
}

TaskId TaskGraph::push(TaskKind kind, std::string_view label, StreamId stream) {
  if (finalized_) throw std::logic_error("TaskGraph: tasks added after finalize()");
  tasks_.push_back(Record{0, stream, 0, intern(label), kind});
  if (!memory_delta_.empty()) memory_delta_.push_back(0);
  return static_cast<TaskId>(tasks_.size() - 1);
}

TaskId TaskGraph::add_compute(std::string_view label, StreamId stream, Time work, std::int32_t hold_sms) {
  if (stream < 0) throw std::invalid_argument("TaskGraph: a compute task needs a stream");
  if (work < 0 || hold_sms < 0) throw std::invalid_argument("TaskGraph: negative work or SMs");
  TaskId t = push(TaskKind::compute, label, stream);
  tasks_[t].work = work;
  tasks_[t].hold_sms = hold_sms;
  return t;
}

void TaskGraph::set_shares_port(TaskId task) {
  if (task >= tasks_.size() || tasks_[task].kind != TaskKind::compute)
    throw std::invalid_argument("TaskGraph: only a compute task can share a network port");
  tasks_[task].shares_port = true;
}

void TaskGraph::set_off_sms(TaskId task) {
  if (task >= tasks_.size() || tasks_[task].kind != TaskKind::compute)
    throw std::invalid_argument("TaskGraph: only a compute task can run off the SMs");
  tasks_[task].off_sms = true;
}

TaskId TaskGraph::add_transfer(std::string_view label, StreamId stream, std::uint32_t src, std::uint32_t dst,
                               double bytes, std::int32_t hold_sms) {
  if (stream < 0) throw std::invalid_argument("TaskGraph: a transfer needs a stream");
  if (!(bytes >= 0) || hold_sms < 0) throw std::invalid_argument("TaskGraph: negative bytes or SMs");
  TaskId t = push(TaskKind::transfer, label, stream);
  tasks_[t].work = static_cast<Time>(transfers_.size());
  tasks_[t].hold_sms = hold_sms;
  transfers_.push_back({bytes, src, dst});
  return t;
}

TaskId TaskGraph::add_marker(std::string_view label, StreamId stream) { return push(TaskKind::marker, label, stream); }

void TaskGraph::add_dependency(TaskId before, TaskId after) {
  if (finalized_) throw std::logic_error("TaskGraph: dependency added after finalize()");
  if (before >= size() || after >= size()) throw std::out_of_range("TaskGraph: dependency on an unknown task");
  edges_.emplace_back(before, after);
}

void TaskGraph::set_memory_delta(TaskId task, std::int64_t bytes) {
  if (memory_delta_.empty()) memory_delta_.assign(size(), 0);
  memory_delta_[task] = bytes;
}

void TaskGraph::finalize() {
  if (finalized_) return;
  pred_count_.assign(size(), 0);
  succ_offset_.assign(size() + 1, 0);
  for (auto [before, after] : edges_) {
    ++pred_count_[after];
    ++succ_offset_[before + 1];
  }
  for (std::size_t i = 0; i < size(); ++i) succ_offset_[i + 1] += succ_offset_[i];
  succ_.resize(edges_.size());
  std::vector<std::uint64_t> fill(succ_offset_.begin(), succ_offset_.end() - 1);
  for (auto [before, after] : edges_) succ_[fill[before]++] = after;
  edges_.clear();
  edges_.shrink_to_fit();
  // Each stream's tasks in the order they were added: the order the stream runs them.
  StreamId streams = 0;
  for (const Record& r : tasks_) streams = std::max(streams, r.stream + 1);
  stream_offset_.assign(static_cast<std::size_t>(streams) + 1, 0);
  for (const Record& r : tasks_)
    if (r.stream != kNoStream) ++stream_offset_[static_cast<std::size_t>(r.stream) + 1];
  for (std::size_t i = 0; i + 1 < stream_offset_.size(); ++i) stream_offset_[i + 1] += stream_offset_[i];
  stream_tasks_.resize(stream_offset_.back());
  fill.assign(stream_offset_.begin(), stream_offset_.end() - 1);
  for (TaskId t = 0; t < size(); ++t)
    if (StreamId st = tasks_[t].stream; st != kNoStream) stream_tasks_[fill[static_cast<std::size_t>(st)]++] = t;
  finalized_ = true;
}

double TaskGraph::bytes_per_task() const {
  double bytes = static_cast<double>(size()) * (sizeof(Record) + sizeof(std::uint32_t) + sizeof(std::uint64_t)) +
                 static_cast<double>(transfers_.size() * sizeof(Transfer) + succ_.size() * sizeof(TaskId) +
                                     stream_tasks_.size() * sizeof(TaskId) + stream_offset_.size() * sizeof(std::uint64_t) +
                                     memory_delta_.size() * sizeof(std::int64_t));
  return size() == 0 ? 0.0 : bytes / static_cast<double>(size());
}

}  // namespace plumb::sim
