#include "validate/gpu/stage_executor.hpp"

#include <algorithm>
#include <cuda_runtime.h>
#include <map>
#include <memory>
#include <stdexcept>

#include "kernels/bench/attention_bench.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/device_fill.hpp"
#include "kernels/gemm_runner.hpp"
#include "kernels/layer_kernels.hpp"
#include "kernels/sm_partition.hpp"

namespace plumb {
namespace {

using kernels::check;
using kernels::DeviceBuffer;

// How long the launcher holds every rank back at a step's start while the host queues the first ops.
constexpr int kHoldMicroseconds = 2000;

// The device buffers of one rank, as plan_buffers sizes them.
struct RankBuffers {
  std::unique_ptr<DeviceBuffer> a, b, a8, b8, c, x, y, w, rstd, index, inbox;
  std::unique_ptr<kernels::AttentionBuffers> attention;  // flash attention's tensors, when the run has any
  std::int64_t index_rows = 1;
};

class Executor {
 public:
  Executor(const VirtualRun& run, const ExecutorOptions& o)
      : run_(run), o_(o), ranks_(static_cast<int>(run.job.layout.pp)),
        part_(o.device, ranks_, static_cast<int>(run.job.cluster.gpu.sms)) {
    check(cudaStreamCreateWithFlags(&launcher_, cudaStreamNonBlocking), "cudaStreamCreate(launcher)");
    check(cudaEventCreate(&go_), "cudaEventCreate(go)");
    events_.resize(static_cast<std::size_t>(ranks_));
    for (int r = 0; r < ranks_; ++r) {
      part_.enter(r);  // the rank's cuBLASLt handle and its kernels belong to its green context
      runners_.push_back(std::make_unique<kernels::GemmRunner>());
      part_.leave();
      buffers_.push_back(allocate(r));
    }
    check(cudaDeviceSynchronize(), "filling the buffers");
  }
  ~Executor() {
    for (auto& per_rank : events_)
      for (cudaEvent_t e : per_rank) cudaEventDestroy(e);
    cudaEventDestroy(go_);
    cudaStreamDestroy(launcher_);
  }

  MeasuredRun measure() {
    MeasuredRun out;
    for (int r = 0; r < ranks_; ++r) out.sms.push_back(part_.sms(r));
    for (int s = 0; s < o_.warmup_steps; ++s) step();
    std::vector<std::vector<MeasuredOp>> timelines;
    std::map<std::pair<std::int32_t, int>, std::vector<double>> kernel_runs;
    for (int s = 0; s < o_.timed_steps; ++s) {
      step();
      check(cudaDeviceSynchronize(), "a timed step");
      timelines.push_back(read_timeline(kernel_runs));
      double end = 0;
      for (int r = 0; r < ranks_; ++r) end = std::max(end, since(r, finish_[static_cast<std::size_t>(r)]));
      out.step_seconds.push_back(end);
    }
    std::vector<std::size_t> by_time(timelines.size());
    for (std::size_t i = 0; i < by_time.size(); ++i) by_time[i] = i;
    std::sort(by_time.begin(), by_time.end(), [&](std::size_t x, std::size_t y) { return out.step_seconds[x] < out.step_seconds[y]; });
    out.timeline = timelines[by_time[by_time.size() / 2]];
    for (auto& [key, runs] : kernel_runs) {
      std::sort(runs.begin(), runs.end());
      out.op_times.push_back({run_.op_names[static_cast<std::size_t>(key.first)], key.second, runs[runs.size() / 2],
                              static_cast<std::int64_t>(runs.size())});
    }
    return out;
  }

 private:
  RankBuffers allocate(int r) {
    const BufferPlan z = plan_buffers(run_, r);
    RankBuffers b;
    auto make = [](std::size_t bytes) { return std::make_unique<DeviceBuffer>(bytes); };
    b.a = make(z.a);
    b.b = make(z.b);
    b.a8 = make(z.a8);
    b.b8 = make(z.b8);
    b.c = make(z.c);
    b.x = make(z.x);
    b.y = make(z.x);
    b.w = make(z.cols * 2);
    b.rstd = make(z.rows * 4);
    b.index = make(z.rows * 4);
    b.inbox = make(z.inbox);
    b.index_rows = static_cast<std::int64_t>(z.rows);
    const auto seed = static_cast<std::uint32_t>(100 * r);
    if (z.attention.batch_heads > 0) b.attention = std::make_unique<kernels::AttentionBuffers>(z.attention, seed + 10);
    using kernels::Element;
    kernels::fill_nonzero(b.a->p, z.a / 2, Element::bf16, seed + 1);
    kernels::fill_nonzero(b.b->p, z.b / 2, Element::bf16, seed + 2);
    kernels::fill_nonzero(b.a8->p, z.a8, Element::fp8_e4m3, seed + 3);
    kernels::fill_nonzero(b.b8->p, z.b8, Element::fp8_e4m3, seed + 4);
    kernels::fill_nonzero(b.x->p, z.x / 2, Element::bf16, seed + 5);
    kernels::fill_nonzero(b.y->p, z.x / 2, Element::bf16, seed + 6);
    kernels::fill_nonzero(b.w->p, z.cols, Element::bf16, seed + 7);
    kernels::fill_nonzero(b.rstd->p, z.rows, Element::word32, seed + 8);  // overwritten by the first norm
    // A gather index that stays in range: row i reads row (i · 7919) mod rows, a scatter over the rows.
    std::vector<std::int32_t> index(z.rows);
    for (std::size_t i = 0; i < z.rows; ++i) index[i] = static_cast<std::int32_t>((i * 7919u) % z.rows);
    check(cudaMemcpy(b.index->p, index.data(), index.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy(index)");
    return b;
  }

  // Launches one kernel of the plan on rank r's stream.
  void launch(int r, const KernelStep& k) {
    RankBuffers& b = buffers_[static_cast<std::size_t>(r)];
    cudaStream_t s = part_.stream(r);
    auto bf = [](const std::unique_ptr<DeviceBuffer>& d) { return static_cast<__nv_bfloat16*>(d->p); };
    switch (k.kind) {
      case KernelKind::gemm:
        runners_[static_cast<std::size_t>(r)]->run({k.m, k.n, k.k, k.batch, k.fp8}, (k.fp8 ? b.a8 : b.a)->p, (k.fp8 ? b.b8 : b.b)->p, b.c->p, s);
        break;
      case KernelKind::attention:
        if (k.pass == 0) kernels::flash_attention_forward(k.attention, b.attention->tensors(), s);
        else kernels::flash_attention_backward(k.attention, b.attention->tensors(), b.attention->gradients(), s);
        break;
      case KernelKind::rmsnorm:
        if (k.pass == 0) kernels::rmsnorm_forward(bf(b.x), bf(b.w), bf(b.y), static_cast<float*>(b.rstd->p), k.rows, k.cols, s);
        else kernels::rmsnorm_backward(bf(b.x), bf(b.w), static_cast<const float*>(b.rstd->p), bf(b.y), bf(b.x), k.rows, k.cols, s);
        break;
      case KernelKind::swiglu:
        if (k.pass == 0) kernels::swiglu_forward(bf(b.x), bf(b.y), k.rows, k.cols, s);
        else kernels::swiglu_backward(bf(b.x), bf(b.y), bf(b.x), k.rows, k.cols, s);
        break;
      case KernelKind::permute:
      case KernelKind::unpermute:
        kernels::gather_rows(bf(b.x), static_cast<const std::int32_t*>(b.index->p), bf(b.y), std::min(k.rows, b.index_rows), k.cols, s);
        break;
      case KernelKind::stream:
        copy(r, b.x->p, b.y->p, stream_copy_bytes(k.bytes));
        break;
    }
  }

  // `bytes` read and as many written on rank r's stream, in passes over buffers of kStreamBuffer.
  void copy(int r, const void* from, void* to, std::size_t bytes) {
    for (std::size_t done = 0; done < bytes; done += kStreamBuffer)
      kernels::stream_copy(from, to, std::min(kStreamBuffer, bytes - done), 8 * part_.sms(r), part_.stream(r));
  }

  // An event of rank r's context (current when this is called), reused from step to step.
  cudaEvent_t event(int r) {
    auto& pool = events_[static_cast<std::size_t>(r)];
    auto& used = used_[static_cast<std::size_t>(r)];
    if (used == pool.size()) {
      cudaEvent_t e = nullptr;
      check(cudaEventCreate(&e), "cudaEventCreate");
      pool.push_back(e);
    }
    return pool[used++];
  }

  void record(cudaEvent_t e, int r) { check(cudaEventRecord(e, part_.stream(r)), "cudaEventRecord"); }

  // Queues one training step: every rank held back until the host has queued the first ops, then
  // the ops in the plan's order, each waiting on the events of the ops on other ranks it needs.
  void step() {
    used_.assign(static_cast<std::size_t>(ranks_), 0);
    op_events_.assign(run_.order.size(), {});
    kernel_events_.clear();
    kernels::hold_stream(launcher_, kHoldMicroseconds);
    check(cudaEventRecord(go_, launcher_), "cudaEventRecord(go)");
    refs_.clear();
    for (int r = 0; r < ranks_; ++r) {
      part_.enter(r);
      check(cudaStreamWaitEvent(part_.stream(r), go_, 0), "cudaStreamWaitEvent(go)");
      refs_.push_back(event(r));
      record(refs_.back(), r);
    }
    for (std::size_t i = 0; i < run_.order.size(); ++i) {
      const RunOp& op = run_.order[i];
      const int r = op.rank;
      part_.enter(r);  // launches and events go to the rank's green context
      for (std::int32_t w : op.waits)
        check(cudaStreamWaitEvent(part_.stream(r), op_events_[static_cast<std::size_t>(w)].second, 0), "cudaStreamWaitEvent");
      cudaEvent_t begin = event(r), end = event(r);
      record(begin, r);
      for (const KernelStep* k : run_.kernels(run_.schedule.ops[static_cast<std::size_t>(r)][static_cast<std::size_t>(op.index)])) {
        cudaEvent_t kb = nullptr, ke = nullptr;
        if (o_.kernel_times) record(kb = event(r), r);
        launch(r, *k);
        if (o_.kernel_times) {
          record(ke = event(r), r);
          kernel_events_.push_back({r, k, kb, ke});
        }
      }
      // The activations (or their gradient) to the neighbouring stage's rank, as a device copy.
      for (int c = 0; c < op.sends; ++c)
        copy(r, buffers_[static_cast<std::size_t>(r)].y->p, buffers_[static_cast<std::size_t>((r + 1) % ranks_)].inbox->p,
             stream_copy_bytes(2.0 * run_.send_bytes));
      record(end, r);
      op_events_[i] = {begin, end};
    }
    // Each rank's optimizer update once its last op is done: a memory-bound pass over its states.
    finish_.clear();
    for (int r = 0; r < ranks_; ++r) {
      part_.enter(r);
      const RankBuffers& b = buffers_[static_cast<std::size_t>(r)];
      copy(r, b.x->p, b.y->p, stream_copy_bytes(run_.optimizer_bytes[static_cast<std::size_t>(r)]));
      finish_.push_back(event(r));
      record(finish_.back(), r);
    }
    part_.leave();
    for (int r = 0; r < ranks_; ++r) check(cudaStreamSynchronize(part_.stream(r)), "a step's stream");
  }

  // Seconds from the step's start to event e of rank r.
  double since(int r, cudaEvent_t e) const {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, refs_[static_cast<std::size_t>(r)], e), "cudaEventElapsedTime");
    return static_cast<double>(ms) * 1e-3;
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
    for (const TimedKernel& t : kernel_events_) {
      if (last && (last->op != t.step->op || last->pass != t.step->pass)) flush();
      float ms = 0;
      check(cudaEventElapsedTime(&ms, t.begin, t.end), "cudaEventElapsedTime(kernel)");
      occurrence[{t.step->op, t.step->pass}] += static_cast<double>(ms) * 1e-3;
      last = t.step;
    }
    flush();
    return out;
  }

  struct TimedKernel {
    int rank;
    const KernelStep* step;
    cudaEvent_t begin, end;
  };

  const VirtualRun& run_;
  ExecutorOptions o_;
  int ranks_;
  kernels::SmPartition part_;
  cudaStream_t launcher_ = nullptr;
  cudaEvent_t go_ = nullptr;
  std::vector<std::unique_ptr<kernels::GemmRunner>> runners_;
  std::vector<RankBuffers> buffers_;
  std::vector<std::vector<cudaEvent_t>> events_;
  std::vector<std::size_t> used_;
  std::vector<cudaEvent_t> refs_, finish_;  // per rank: the step's start, its last work's end
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> op_events_;
  std::vector<TimedKernel> kernel_events_;
};

}  // namespace

MeasuredRun execute_virtual_run(const VirtualRun& run, const ExecutorOptions& options) {
  if (options.timed_steps < 1) throw std::runtime_error("time at least one step");
  Executor e(run, options);
  return e.measure();
}

}  // namespace plumb
