#include "validate/host/host_rank.hpp"

#include <algorithm>
#include <cstring>

namespace plumb {
namespace {

std::vector<std::uint16_t> halves(std::size_t elements, float phase) {
  const std::vector<float> f = host::varied_floats(elements, phase);
  std::vector<std::uint16_t> v(f.size());
  std::transform(f.begin(), f.end(), v.begin(), host::to_bf16);
  return v;
}

// `bytes` read and as many written, in passes over the two buffers.
void copy(const std::vector<std::uint16_t>& from, std::vector<std::uint16_t>& to, std::size_t bytes) {
  const std::size_t chunk = std::min(from.size(), to.size()) * sizeof(std::uint16_t);
  if (chunk == 0) return;
  for (std::size_t done = 0; done < bytes; done += chunk) std::memcpy(to.data(), from.data(), std::min(chunk, bytes - done));
}

template <class F>
double timed(F f) {
  const double t0 = host::thread_cpu_seconds();
  f();
  return host::thread_cpu_seconds() - t0;
}

}  // namespace

HostRank::HostRank(const VirtualRun& run, int rank) {
  const BufferPlan z = plan_buffers(run, rank);
  const float phase = static_cast<float>(rank);
  // GEMM operands hold as many floats as the GPU's hold 16-bit (or fp8) elements.
  a_ = host::varied_floats(std::max(z.a / 2, z.a8), phase + 0.1f);
  b_ = host::varied_floats(std::max(z.b / 2, z.b8), phase + 0.2f);
  c_ = host::varied_floats(z.c / 2, phase + 0.3f);
  x_ = halves(z.x / 2, phase + 0.4f);
  y_ = halves(z.x / 2, phase + 0.5f);
  w_ = halves(z.cols, phase + 0.6f);
  inbox_ = halves(z.inbox / 2, phase + 0.7f);
  rstd_.assign(std::max<std::size_t>(z.rows, 1), 1.0f);
  index_ = gather_index(std::max<std::size_t>(z.rows, 1));
  if (z.attention.batch_heads > 0) {
    attention_ = std::make_unique<host::AttentionTensors>(z.attention);
    host::attention_forward(z.attention, *attention_);  // a log-sum-exp for a backward that runs first
  }
}

double HostRank::run(const KernelStep& k) {
  return timed([&] {
    switch (k.kind) {
      case KernelKind::gemm: host::gemm(k.gemm(), a_.data(), b_.data(), c_.data()); break;
      case KernelKind::attention:
        if (k.pass == 0) host::attention_forward(k.attention, *attention_);
        else host::attention_backward(k.attention, *attention_);
        break;
      case KernelKind::rmsnorm:
        if (k.pass == 0) host::rmsnorm_forward(x_.data(), w_.data(), y_.data(), rstd_.data(), k.rows, k.cols);
        else host::rmsnorm_backward(x_.data(), w_.data(), rstd_.data(), y_.data(), x_.data(), k.rows, k.cols);
        break;
      case KernelKind::swiglu:
        if (k.pass == 0) host::swiglu_forward(x_.data(), y_.data(), k.rows, k.cols);
        else host::swiglu_backward(x_.data(), y_.data(), x_.data(), k.rows, k.cols);
        break;
      case KernelKind::permute:
      case KernelKind::unpermute:
        host::gather_rows(x_.data(), index_.data(), y_.data(), std::min<std::int64_t>(k.rows, static_cast<std::int64_t>(index_.size())), k.cols);
        break;
      case KernelKind::stream: copy(x_, y_, stream_copy_bytes(k.bytes)); break;
    }
  });
}

double HostRank::stream(double bytes) {
  return timed([&] { copy(x_, y_, stream_copy_bytes(bytes)); });
}

double HostRank::send_to(std::vector<std::uint16_t>& inbox, double bytes) const {
  return timed([&] { copy(y_, inbox, stream_copy_bytes(2.0 * bytes)); });
}

std::size_t HostRank::message_bytes(const VirtualRun& run, int from, int to) {
  const std::size_t payload = stream_copy_bytes(2.0 * run.send_bytes);
  return std::min({payload, plan_buffers(run, from).x / 2 * 2, plan_buffers(run, to).inbox / 2 * 2});
}

}  // namespace plumb
