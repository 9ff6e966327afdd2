#include "validate/execute/executor.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <utility>

namespace plumb {
namespace {

class Executor {
 public:
  Executor(const VirtualRun& run, PipelineDevice& device, const ExecutorOptions& o)
      : run_(run), device_(device), o_(o), ranks_(static_cast<int>(run.job.layout.pp)) {}

  MeasuredRun measure() {
    MeasuredRun out;
    for (int r = 0; r < ranks_; ++r) out.sms.push_back(device_.units(r));
    for (int s = 0; s < o_.warmup_steps; ++s) step();
    std::vector<std::vector<MeasuredOp>> timelines;
    std::vector<std::vector<MeasuredSpan>> reductions;
    std::map<std::pair<std::int32_t, int>, std::vector<double>> kernel_runs;
    for (int s = 0; s < o_.timed_steps; ++s) {
      step();
      timelines.push_back(read_timeline(kernel_runs));
      reductions.push_back(read_reductions());
      double end = 0;
      for (int r = 0; r < ranks_; ++r) end = std::max(end, since(r, finish_[static_cast<std::size_t>(r)]));
      out.step_seconds.push_back(end);
    }
    std::vector<std::size_t> by_time(timelines.size());
    for (std::size_t i = 0; i < by_time.size(); ++i) by_time[i] = i;
    std::sort(by_time.begin(), by_time.end(), [&](std::size_t x, std::size_t y) { return out.step_seconds[x] < out.step_seconds[y]; });
    out.timeline = timelines[by_time[by_time.size() / 2]];
    out.gradient_reductions = reductions[by_time[by_time.size() / 2]];
    for (auto& [key, runs] : kernel_runs) {
      std::sort(runs.begin(), runs.end());
      out.op_times.push_back({run_.op_names[static_cast<std::size_t>(key.first)], key.second, runs[runs.size() / 2],
                              static_cast<std::int64_t>(runs.size())});
    }
    return out;
  }

 private:
  using Event = PipelineDevice::Event;
  struct TimedKernel {
    int rank;
    const KernelStep* step;
    Event begin, end;
  };

  // Queues one training step and waits for it: the ops in the plan's order, each after the events of
  // the ops on other ranks it needs; then each rank's optimizer update, a memory-bound pass over its
  // states, once its last op is done.
  void step() {
    op_events_.assign(run_.order.size(), {});
    kernels_.clear();
    refs_.clear();
    finish_.clear();
    device_.begin_step();
    for (int r = 0; r < ranks_; ++r) refs_.push_back(device_.record(r));
    for (std::size_t i = 0; i < run_.order.size(); ++i) {
      const RunOp& op = run_.order[i];
      const int r = op.rank;
      for (std::int32_t w : op.waits) device_.wait(r, op_events_[static_cast<std::size_t>(w)].second);
      const Event begin = device_.record(r);
      for (const KernelStep* k : run_.kernels(run_.schedule.ops[static_cast<std::size_t>(r)][static_cast<std::size_t>(op.index)])) {
        const Event kb = o_.kernel_times ? device_.record(r) : 0;
        device_.launch(r, *k);
        if (o_.kernel_times) kernels_.push_back({r, k, kb, device_.record(r)});
      }
      // The activations (or their gradient) to the neighbouring stage's rank.
      for (int c = 0; c < op.sends; ++c) device_.send(r, (r + 1) % ranks_, run_.send_bytes);
      op_events_[i] = {begin, device_.record(r)};
    }
    reduce_.assign(static_cast<std::size_t>(ranks_), {});
    for (int r = 0; r < ranks_; ++r) {
      if (const double bytes = run_.gradient_bytes[static_cast<std::size_t>(r)]; bytes > 0) {
        const Event begin = device_.record(r);
        device_.reduce_gradients(r, bytes);
        reduce_[static_cast<std::size_t>(r)] = {begin, device_.record(r)};
      }
      device_.stream(r, run_.optimizer_bytes[static_cast<std::size_t>(r)]);
      finish_.push_back(device_.record(r));
    }
    device_.end_step();
  }

  // Seconds from the step's start on rank r to event e of that rank.
  double since(int r, Event e) { return device_.seconds(r, refs_[static_cast<std::size_t>(r)], e); }

  // Each rank's gradient all-reduce of the step, where the run has replicas.
  std::vector<MeasuredSpan> read_reductions() {
    std::vector<MeasuredSpan> out;
    for (int r = 0; r < ranks_; ++r)
      if (run_.gradient_bytes[static_cast<std::size_t>(r)] > 0) {
        const auto& [begin, end] = reduce_[static_cast<std::size_t>(r)];
        out.push_back({r, since(r, begin), since(r, end)});
      }
    return out;
  }

  std::vector<MeasuredOp> read_timeline(std::map<std::pair<std::int32_t, int>, std::vector<double>>& kernel_runs) {
    std::vector<MeasuredOp> out;
    for (std::size_t i = 0; i < run_.order.size(); ++i) {
      const RunOp& op = run_.order[i];
      out.push_back({op.rank, op.index, since(op.rank, op_events_[i].first), since(op.rank, op_events_[i].second)});
    }
    // Kernels of one plumb op and pass that run back to back (a layer's several GEMMs for one op,
    // unfused attention's) add up to one occurrence.
    std::map<std::pair<std::int32_t, int>, double> occurrence;
    const KernelStep* last = nullptr;
    auto flush = [&]() {
      for (auto& [key, seconds] : occurrence) kernel_runs[key].push_back(seconds);
      occurrence.clear();
    };
    for (const TimedKernel& t : kernels_) {
      if (last && (last->op != t.step->op || last->pass != t.step->pass)) flush();
      occurrence[{t.step->op, t.step->pass}] += device_.seconds(t.rank, t.begin, t.end);
      last = t.step;
    }
    flush();
    return out;
  }

  const VirtualRun& run_;
  PipelineDevice& device_;
  ExecutorOptions o_;
  int ranks_;
  std::vector<Event> refs_, finish_;  // per rank: the step's start, its last work's end
  std::vector<std::pair<Event, Event>> op_events_, reduce_;
  std::vector<TimedKernel> kernels_;
};

}  // namespace

MeasuredRun execute_virtual_run(const VirtualRun& run, PipelineDevice& device, const ExecutorOptions& options) {
  if (options.timed_steps < 1) throw std::runtime_error("time at least one step");
  Executor e(run, device, options);
  return e.measure();
}

}  // namespace plumb
