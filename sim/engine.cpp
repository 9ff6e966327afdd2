#include "sim/engine.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <fmt/format.h>

#include "sim/network.hpp"

namespace plumb::sim {
namespace {

enum class EventKind : std::uint8_t { finish, compute_done, transmitted };

// An event: a time, what happens (a task finishes, a shared-speed task's work is done, a flow's
// last byte leaves) to which task — or, for `transmitted`, which network flow — and a version that
// lets an event whose estimate was superseded (a speed or rate changed) be recognised.
struct Event {
  Time time;
  std::uint32_t key;  // kind (2 bits) over the id (30 bits)
  std::uint32_t version;
  Event() = default;
  Event(Time t, EventKind kind, std::uint32_t id, std::uint32_t v)
      : time(t), key((static_cast<std::uint32_t>(kind) << 30) | id), version(v) {}
  std::uint32_t id() const { return key & 0x3fffffffu; }
  EventKind kind() const { return static_cast<EventKind>(key >> 30); }
};
constexpr std::uint32_t kMaxEventId = 0x3fffffffu;

// The event queue, ordered by (time, sequence): events of one time come out in the order they were
// pushed, so equal-time events run in a fixed order and runs are deterministic.
//
// A radix heap on time (Ahuja, Mehlhorn, Orlin and Tarjan, J. ACM 1990): a monotone priority queue,
// for times that never fall below the current one — as in a simulation. Bucket b ≥ 1 holds the
// events whose time's highest bit differing from the current time is bit b − 1; `current_` holds
// those of the current time. Pushing is O(1); when the current time is used up, the lowest
// non-empty bucket's least time becomes current and its events drop into lower buckets, so each
// event moves at most 64 times and in practice a few. All events of one time always share a bucket
// and moving keeps their order, which makes each time first-in first-out. Whether more events of
// the current instant are queued is an O(1) question.
class EventQueue {
 public:
  bool empty() const { return next_ == current_.size() && nonempty_ == 0; }
  bool has_same_time() const { return next_ < current_.size(); }
  Event pop() {
    if (next_ == current_.size()) refill();
    return current_[next_++];
  }
  void push(Event e) {
    std::uint64_t x = static_cast<std::uint64_t>(e.time) ^ time_;
    if (x == 0) {
      current_.push_back(e);
      return;
    }
    int b = 64 - __builtin_clzll(x);
    buckets_[static_cast<std::size_t>(b)].push_back(e);
    nonempty_ |= std::uint64_t{1} << (b - 1);
  }

 private:
  void refill() {
    current_.clear();
    next_ = 0;
    int b = __builtin_ctzll(nonempty_) + 1;
    std::vector<Event>& bucket = buckets_[static_cast<std::size_t>(b)];
    Time least = bucket.front().time;
    for (const Event& e : bucket) least = std::min(least, e.time);
    time_ = static_cast<std::uint64_t>(least);
    nonempty_ &= ~(std::uint64_t{1} << (b - 1));
    for (const Event& e : bucket) push(e);
    bucket.clear();
  }

  std::array<std::vector<Event>, 65> buckets_;  // [0] unused: the current time's events are in current_
  std::vector<Event> current_;                   // the current time's events; [next_, end) still queued
  std::size_t next_ = 0;
  std::uint64_t nonempty_ = 0;  // bit b − 1: bucket b has events
  std::uint64_t time_ = 0;      // the current time (times are never negative)
};

struct FluidTask {
  TaskId task;
  double remaining;  // picoseconds of work at full speed
  double speed = 0;
  Time last;
};

// What the engine tracks per task besides the results (start, end and binding live in the
// SimResult's own arrays from the start, so nothing is copied at the end).
constexpr std::uint32_t kStarted = 0xffffffffu;

struct TaskState {
  TaskId last_dep = kNoTask;  // the dependency that finished last
  std::uint32_t pending = 0;  // dependencies not yet finished; kStarted once it has started
  std::uint32_t version = 0;  // bumped when an SM-sharing task's speed changes
};

struct GpuState {
  std::int32_t held_sms = 0;
  std::vector<FluidTask> fluid;
  std::vector<FluidTask> port;  // tasks sharing the GPU's network port
  bool dirty = false;
  std::int64_t memory = 0;
};

class Engine {
 public:
  Engine(const TaskGraph& g, const Machine& m, const Topology* t)
      : g_(g), m_(m), topology_(t), gpus_(m.gpus().size()),
        stream_busy_(m.streams().size(), 0) {
    if (!g.finalized()) throw std::logic_error("simulate: finalize() the task graph first");
    if (t) network_.emplace(*t);
    std::size_t n = g.size();
    if (n > kMaxEventId) throw std::length_error("simulate: more than 2^30 tasks");
    if (g.stream_count() > m.streams().size()) throw std::out_of_range("simulate: task on an unknown stream");
    if (g.has_transfers() && !t) throw std::logic_error("simulate: transfers need a topology");
    stream_next_.resize(g.stream_count());
    for (std::size_t s = 0; s < g.stream_count(); ++s) stream_next_[s] = g.stream_begin(s);
    st_.resize(n);
    for (TaskId i = 0; i < n; ++i) st_[i].pending = g.predecessor_count(i);
    r_.start.assign(n, -1);
    r_.end.assign(n, -1);
    r_.binding.assign(n, kNoTask);
    r_.memory.resize(gpus_.size());
    r_.peak_memory.assign(gpus_.size(), 0);
  }

  SimResult run() {
    for (TaskId i = 0; i < g_.size(); ++i)
      if (st_[i].pending == 0 && g_.stream(i) == kNoStream) start(i);
    for (std::size_t s = 0; s < g_.stream_count(); ++s) try_stream(static_cast<StreamId>(s));
    settle();
    for (Event e; next_event(e);) {
      now_ = e.time;
      ++r_.events;
      handle(e);
      if (instant_over()) settle();
    }
    if (finished_ != g_.size()) deadlock();
    // The last task's end, not the last event's time: an SM-sharing task that sped up leaves its first
    // completion event behind, stale, and popping it still moved the clock.
    r_.makespan = g_.size() == 0 ? 0 : *std::max_element(r_.end.begin(), r_.end.end());
    r_.stream_busy = std::move(stream_busy_);
    if (network_) {
      r_.link_bytes.resize(topology_->link_count());
      for (LinkId l = 0; l < topology_->link_count(); ++l) r_.link_bytes[l] = network_->link_bytes(l);
      r_.rate_updates = network_->recomputes();
    }
    return std::move(r_);
  }

 private:
  // Events of the current instant join the queue behind those already due now.
  void push(Time t, std::uint32_t id, EventKind kind, std::uint32_t version = 0) {
    queue_.push(Event(t, kind, id, version));
  }

  bool next_event(Event& e) {
    if (queue_.empty()) return false;
    e = queue_.pop();
    return true;
  }

  bool instant_over() const { return !queue_.has_same_time(); }

  std::int32_t gpu_of(TaskId t) const { return g_.stream(t) == kNoStream ? -1 : m_.gpu_of(g_.stream(t)); }

  // Starts the head of stream s if it is ready and nothing else runs there.
  void try_stream(StreamId s) {
    std::size_t si = static_cast<std::size_t>(s);
    std::uint64_t pos = stream_next_[si];
    if (pos >= g_.stream_begin(si + 1)) return;
    TaskId head = g_.stream_task(pos);
    if (st_[head].pending != 0) return;  // waiting for a dependency, or started (kStarted)
    start(head);
  }

  void start(TaskId t) {
    TaskState& state = st_[t];
    state.pending = kStarted;
    r_.start[t] = now_;
    TaskId prev = kNoTask;
    if (StreamId s = g_.stream(t); s != kNoStream) {
      std::uint64_t pos = stream_next_[static_cast<std::size_t>(s)];
      if (pos > g_.stream_begin(static_cast<std::size_t>(s))) prev = g_.stream_task(pos - 1);
    }
    TaskId dep = state.last_dep;
    r_.binding[t] = (prev != kNoTask && (dep == kNoTask || r_.end[prev] >= r_.end[dep])) ? prev : dep;
    std::int32_t gpu = gpu_of(t);
    if (g_.hold_sms(t) > 0) {
      gpus_[static_cast<std::size_t>(gpu)].held_sms += g_.hold_sms(t);
      mark(gpu);
    }
    switch (g_.kind(t)) {
      case TaskKind::marker: push(now_, t, EventKind::finish); break;
      case TaskKind::compute:
        if (g_.shares_port(t) && g_.work(t) > 0) {
          gpus_[static_cast<std::size_t>(gpu)].port.push_back({t, static_cast<double>(g_.work(t)), 0.0, now_});
          mark(gpu);
        } else if (g_.hold_sms(t) > 0 || g_.off_sms(t) || g_.work(t) == 0) {
          push(later(now_, g_.work(t)), t, EventKind::finish);
        } else {
          gpus_[static_cast<std::size_t>(gpu)].fluid.push_back({t, static_cast<double>(g_.work(t)), 0.0, now_});
          mark(gpu);
        }
        break;
      case TaskKind::transfer: start_transfer(t); break;
    }
  }

  void start_transfer(TaskId t) {
    auto vertex = [&](std::uint32_t v) {
      if (v >= topology_->vertex_count()) throw std::out_of_range("simulate: transfer to an unknown topology vertex");
      return static_cast<Topology::Vertex>(v);
    };
    std::vector<LinkId> path = topology_->route(vertex(g_.src(t)), vertex(g_.dst(t)), t);
    if (path.empty()) {  // a copy within one device
      push(now_, t, EventKind::finish);
      return;
    }
    Network::FlowId f = network_->start(std::move(path), g_.bytes(t), now_);
    if (flow_task_.size() <= f) flow_task_.resize(f + 1);
    flow_task_[f] = t;
  }

  // Only SM- or port-sharing tasks care what else runs; a GPU without them needs no re-rating.
  void mark(std::int32_t gpu) {
    GpuState& state = gpus_[static_cast<std::size_t>(gpu)];
    if (state.dirty || (state.fluid.empty() && state.port.empty())) return;
    state.dirty = true;
    dirty_gpus_.push_back(gpu);
  }

  void handle(const Event& e) {
    const std::uint32_t id = e.id();
    switch (e.kind()) {
      case EventKind::finish: finish(id); break;
      case EventKind::compute_done: {
        if (e.version != st_[id].version) return;  // its speed changed since
        GpuState& gpu = gpus_[static_cast<std::size_t>(gpu_of(id))];
        std::vector<FluidTask>& list = g_.shares_port(id) ? gpu.port : gpu.fluid;
        list.erase(std::find_if(list.begin(), list.end(), [&](const FluidTask& f) { return f.task == id; }));
        mark(gpu_of(id));
        finish(id);
        break;
      }
      case EventKind::transmitted: {
        Network::FlowId f = id;
        if (e.version != network_->version(f)) return;  // its rate changed since
        TaskId t = flow_task_[f];
        Time latency = network_->latency(f);
        network_->stop(f, now_);
        release_stream(t);
        push(later(now_, latency), t, EventKind::finish);
        break;
      }
    }
  }

  void finish(TaskId t) {
    r_.end[t] = now_;
    r_.last_finished = t;
    ++finished_;
    std::int32_t gpu = gpu_of(t);
    if (g_.hold_sms(t) > 0) {
      gpus_[static_cast<std::size_t>(gpu)].held_sms -= g_.hold_sms(t);
      mark(gpu);
    }
    if (std::int64_t delta = g_.memory_delta(t); delta != 0 && gpu >= 0) {
      GpuState& state = gpus_[static_cast<std::size_t>(gpu)];
      state.memory += delta;
      r_.memory[static_cast<std::size_t>(gpu)].push_back({now_, state.memory});
      r_.peak_memory[static_cast<std::size_t>(gpu)] = std::max(r_.peak_memory[static_cast<std::size_t>(gpu)], state.memory);
    }
    for (const TaskId* s = g_.successors_begin(t); s != g_.successors_end(t); ++s) {
      if (--st_[*s].pending != 0) continue;
      st_[*s].last_dep = t;
      if (g_.stream(*s) == kNoStream) start(*s);
      else try_stream(g_.stream(*s));
    }
    release_stream(t);
  }

  // The task's stream may run its next task. A transfer releases its sender's stream when its last
  // byte has left (as NCCL pipelines sends), before the data arrives; anything else when it ends.
  void release_stream(TaskId t) {
    StreamId s = g_.stream(t);
    if (s == kNoStream) return;
    std::size_t si = static_cast<std::size_t>(s);
    std::uint64_t pos = stream_next_[si];
    if (pos >= g_.stream_begin(si + 1) || g_.stream_task(pos) != t) return;  // released already
    stream_busy_[si] += now_ - r_.start[t];
    ++stream_next_[si];
    try_stream(s);
  }

  // After all events of one instant: re-share SMs on GPUs whose load changed, and bandwidth.
  void settle() {
    // In the order GPUs became dirty, so equal-time events keep a fixed order.
    for (std::int32_t g : dirty_gpus_) {
      std::size_t gi = static_cast<std::size_t>(g);
      GpuState& gpu = gpus_[gi];
      gpu.dirty = false;
      if (!gpu.fluid.empty()) {
        double sms = static_cast<double>(m_.gpus()[gi].sms);
        double free = std::max(0.0, sms - gpu.held_sms);
        rerate(gpu.fluid, m_.curve.speed(free / sms / static_cast<double>(gpu.fluid.size())));
      }
      if (!gpu.port.empty()) rerate(gpu.port, 1.0 / static_cast<double>(gpu.port.size()));  // an equal share each
    }
    dirty_gpus_.clear();
    if (network_ && network_->dirty()) {
      network_->recompute(now_);
      r_.flows_refilled += network_->refilled();
      for (Network::FlowId f : network_->changed()) {
        if (flow_version_.size() <= f) flow_version_.resize(f + 1, ~0u);
        if (flow_version_[f] == network_->version(f)) continue;  // estimate unchanged, event already queued
        flow_version_[f] = network_->version(f);
        push(network_->transmit_end(f), f, EventKind::transmitted, network_->version(f));
      }
    }
  }

  // New speed for every task of a sharing group; those whose speed changed get a new completion.
  void rerate(std::vector<FluidTask>& tasks, double speed) {
    for (FluidTask& f : tasks) {
      if (speed == f.speed) continue;  // its queued completion still holds
      f.remaining = std::max(0.0, f.remaining - f.speed * static_cast<double>(now_ - f.last));
      f.last = now_;
      f.speed = speed;
      std::uint32_t version = ++st_[f.task].version;
      if (speed > 0) {
        const double picos = std::ceil(f.remaining / speed);
        check_duration(picos * kSecondsPerPico, "an op at its share of the SMs");
        push(later(now_, static_cast<Time>(picos)), f.task, EventKind::compute_done, version);
      }
    }
  }

  [[noreturn]] void deadlock() {
    std::vector<std::vector<TaskId>> preds(g_.size());
    for (TaskId u = 0; u < g_.size(); ++u)
      for (const TaskId* s = g_.successors_begin(u); s != g_.successors_end(u); ++s)
        if (r_.end[u] < 0) preds[*s].push_back(u);
    auto name = [&](TaskId t) { return fmt::format("\"{}\" (#{})", g_.label(t), t); };
    std::vector<TaskId> waiting;
    std::string lines;
    for (TaskId t = 0; t < g_.size(); ++t) {
      if (r_.start[t] >= 0 || st_[t].pending == 0) continue;
      waiting.push_back(t);
      if (waiting.size() > 12) continue;
      std::string on;
      if (StreamId s = g_.stream(t); s != kNoStream) {
        const SimStream& st = m_.streams()[static_cast<std::size_t>(s)];
        on = fmt::format(" on {}/{}", m_.gpus()[static_cast<std::size_t>(st.gpu)].name, st.name);
      }
      std::string deps;
      for (TaskId p : preds[t]) deps += (deps.empty() ? "" : ", ") + name(p);
      lines += fmt::format("\n  {}{} waits for {}", name(t), on, deps);
    }
    // Ready tasks that never ran are stuck behind an earlier task of their stream.
    for (std::size_t s = 0; s < g_.stream_count(); ++s) {
      std::uint64_t pos = stream_next_[s];
      if (pos >= g_.stream_begin(s + 1)) continue;
      TaskId head = g_.stream_task(pos);
      for (std::uint64_t i = pos + 1; i < g_.stream_begin(s + 1); ++i) {
        TaskId t = g_.stream_task(i);
        if (st_[t].pending == 0 && r_.start[t] < 0) {
          waiting.push_back(t);
          if (waiting.size() <= 12) lines += fmt::format("\n  {} waits for {} ahead of it on its stream", name(t), name(head));
        }
      }
    }
    std::sort(waiting.begin(), waiting.end());
    throw DeadlockError(fmt::format("deadlock at t = {} ps: {} of {} tasks can never run{}{}", now_,
                                    g_.size() - finished_, g_.size(), lines,
                                    waiting.size() > 12 ? fmt::format("\n  ... and {} more", waiting.size() - 12) : ""),
                        std::move(waiting));
  }

  const TaskGraph& g_;
  const Machine& m_;
  const Topology* topology_;
  std::optional<Network> network_;
  std::vector<GpuState> gpus_;
  std::vector<std::int32_t> dirty_gpus_;
  std::vector<std::uint64_t> stream_next_;  // per stream, the position of its next task in the graph's order
  std::vector<Time> stream_busy_;
  std::vector<TaskState> st_;
  std::vector<TaskId> flow_task_;
  std::vector<std::uint32_t> flow_version_;  // per flow, the version of its queued completion event
  EventQueue queue_;
  std::size_t finished_ = 0;
  Time now_ = 0;
  SimResult r_;
};

}  // namespace

SimResult simulate(const TaskGraph& graph, const Machine& machine, const Topology* topology) {
  return Engine(graph, machine, topology).run();
}

std::vector<TaskId> critical_path(const SimResult& result) {
  std::vector<TaskId> path;
  for (TaskId t = result.last_finished; t != kNoTask; t = result.binding[t]) path.push_back(t);
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace plumb::sim
