#include "validate/gpu/cuda_pipeline_device.hpp"

#include <algorithm>
#include <cuda_runtime.h>
#include <memory>
#include <stdexcept>

#include "kernels/bench/attention_bench.hpp"
#include "kernels/bench/gemm_bench.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/device_fill.hpp"
#include "kernels/device_info.hpp"
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

class CudaPipelineDevice final : public PipelineDevice {
 public:
  CudaPipelineDevice(const VirtualRun& run, int device)
      : run_(run), device_(device), ranks_(static_cast<int>(run.job.layout.pp)),
        part_(device, ranks_, static_cast<int>(run.job.cluster.gpu.sms)) {
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
  ~CudaPipelineDevice() override {
    for (auto& per_rank : events_)
      for (cudaEvent_t e : per_rank) cudaEventDestroy(e);
    cudaEventDestroy(go_);
    cudaStreamDestroy(launcher_);
  }

  DeviceIdentity identity() const override {
    for (const kernels::DeviceInfo& d : kernels::list_devices())
      if (d.index == device_) return {d.name, d.driver_version, static_cast<double>(kernels::sm_clock_mhz())};
    return {"GPU " + std::to_string(device_), "", 0};
  }
  int units(int rank) const override { return part_.sms(rank); }

  // Every rank held back until the host has queued the step's first ops.
  void begin_step() override {
    used_.assign(static_cast<std::size_t>(ranks_), 0);
    all_.clear();
    kernels::hold_stream(launcher_, kHoldMicroseconds);
    check(cudaEventRecord(go_, launcher_), "cudaEventRecord(go)");
    for (int r = 0; r < ranks_; ++r) {
      part_.enter(r);
      check(cudaStreamWaitEvent(part_.stream(r), go_, 0), "cudaStreamWaitEvent(go)");
    }
    part_.leave();
  }

  Event record(int rank) override {
    part_.enter(rank);
    cudaEvent_t e = event(rank);
    check(cudaEventRecord(e, part_.stream(rank)), "cudaEventRecord");
    all_.push_back(e);
    return all_.size() - 1;
  }

  void wait(int rank, Event e) override {
    part_.enter(rank);
    check(cudaStreamWaitEvent(part_.stream(rank), all_.at(e), 0), "cudaStreamWaitEvent");
  }

  void launch(int r, const KernelStep& k) override {
    part_.enter(r);
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

  void send(int rank, int to_rank, double bytes) override {
    part_.enter(rank);
    copy(rank, buffers_[static_cast<std::size_t>(rank)].y->p, buffers_[static_cast<std::size_t>(to_rank)].inbox->p,
         stream_copy_bytes(2.0 * bytes));
  }

  void stream(int rank, double bytes) override {
    part_.enter(rank);
    const RankBuffers& b = buffers_[static_cast<std::size_t>(rank)];
    copy(rank, b.x->p, b.y->p, stream_copy_bytes(bytes));
  }

  void end_step() override {
    part_.leave();
    for (int r = 0; r < ranks_; ++r) check(cudaStreamSynchronize(part_.stream(r)), "a step's stream");
  }

  double seconds(int, Event from, Event to) override {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, all_.at(from), all_.at(to)), "cudaEventElapsedTime");
    return static_cast<double>(ms) * 1e-3;
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
    const std::vector<std::int32_t> index = gather_index(z.rows);
    check(cudaMemcpy(b.index->p, index.data(), index.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy(index)");
    return b;
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

  const VirtualRun& run_;
  int device_;
  int ranks_;
  kernels::SmPartition part_;
  cudaStream_t launcher_ = nullptr;
  cudaEvent_t go_ = nullptr;
  std::vector<std::unique_ptr<kernels::GemmRunner>> runners_;
  std::vector<RankBuffers> buffers_;
  std::vector<std::vector<cudaEvent_t>> events_;  // per rank, reused from step to step
  std::vector<std::size_t> used_;
  std::vector<cudaEvent_t> all_;                  // this step's events, by the handle record() gave
};

}  // namespace

std::unique_ptr<PipelineDevice> make_cuda_pipeline_device(const VirtualRun& run, int device) {
  return std::make_unique<CudaPipelineDevice>(run, device);
}

}  // namespace plumb
