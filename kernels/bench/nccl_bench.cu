#include "kernels/bench/nccl_bench.hpp"

#include <algorithm>
#include <cstdlib>
#include <dlfcn.h>
#include <memory>
#include <nccl.h>
#include <stdexcept>
#include <string>

#include "kernels/cuda_check.hpp"
#include "kernels/device_fill.hpp"

namespace plumb::kernels {
namespace {

// The NCCL entry points, from the library loaded at run time.
struct Nccl {
  void* lib = nullptr;
#define PLUMB_NCCL_FUNCTION(name) decltype(&name) name##_ = nullptr
  PLUMB_NCCL_FUNCTION(ncclCommInitAll);
  PLUMB_NCCL_FUNCTION(ncclCommDestroy);
  PLUMB_NCCL_FUNCTION(ncclGetErrorString);
  PLUMB_NCCL_FUNCTION(ncclAllReduce);
  PLUMB_NCCL_FUNCTION(ncclAllGather);
  PLUMB_NCCL_FUNCTION(ncclReduceScatter);
  PLUMB_NCCL_FUNCTION(ncclSend);
  PLUMB_NCCL_FUNCTION(ncclRecv);
  PLUMB_NCCL_FUNCTION(ncclGroupStart);
  PLUMB_NCCL_FUNCTION(ncclGroupEnd);
#undef PLUMB_NCCL_FUNCTION

  Nccl() {
    const char* named = std::getenv("PLUMB_NCCL");
    const std::string path = named && *named ? named : "libnccl.so.2";
    lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      throw std::runtime_error("cannot load NCCL (" + path + "): set PLUMB_NCCL to libnccl.so.2's path (PyTorch ships one: python3 -c \"import "
                               "nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))\", then lib/libnccl.so.2)");
    auto load = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn) throw std::runtime_error(path + " has no " + name);
    };
    load(ncclCommInitAll_, "ncclCommInitAll");
    load(ncclCommDestroy_, "ncclCommDestroy");
    load(ncclGetErrorString_, "ncclGetErrorString");
    load(ncclAllReduce_, "ncclAllReduce");
    load(ncclAllGather_, "ncclAllGather");
    load(ncclReduceScatter_, "ncclReduceScatter");
    load(ncclSend_, "ncclSend");
    load(ncclRecv_, "ncclRecv");
    load(ncclGroupStart_, "ncclGroupStart");
    load(ncclGroupEnd_, "ncclGroupEnd");
  }
  void check(ncclResult_t r, const char* what) const {
    if (r != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString_(r));
  }
};

const Nccl& nccl() {
  static const Nccl n;
  return n;
}

// One GPU's part: its communicator, stream, buffers and events.
struct Rank {
  int device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  std::unique_ptr<DeviceBuffer> send, recv;
  cudaEvent_t start = nullptr, stop = nullptr;
};

}  // namespace

std::vector<NcclTiming> time_nccl(NcclCollective op, const std::vector<int>& devices, double min_bytes, double max_bytes, int warmup,
                                  int iterations) {
  if (devices.size() < 2) throw std::runtime_error("collectives need at least two GPUs; this machine shows " + std::to_string(devices.size()));
  const Nccl& n = nccl();
  const auto ranks = static_cast<int>(devices.size());
  std::vector<ncclComm_t> comms(devices.size());
  n.check(n.ncclCommInitAll_(comms.data(), ranks, devices.data()), "ncclCommInitAll");
  std::vector<Rank> rs(devices.size());
  // nccl-tests' size is the whole buffer: all-gather's output and reduce-scatter's input are n shards.
  const std::size_t biggest = static_cast<std::size_t>(max_bytes) / 16 * 16;
  for (int r = 0; r < ranks; ++r) {
    Rank& x = rs[static_cast<std::size_t>(r)];
    x.device = devices[static_cast<std::size_t>(r)];
    x.comm = comms[static_cast<std::size_t>(r)];
    check(cudaSetDevice(x.device), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&x.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    x.send = std::make_unique<DeviceBuffer>(biggest);
    x.recv = std::make_unique<DeviceBuffer>(biggest);
    fill_nonzero(x.send->p, biggest / 2, Element::bf16, 41u + static_cast<std::uint32_t>(r), x.stream);
    check(cudaEventCreate(&x.start), "cudaEventCreate");
    check(cudaEventCreate(&x.stop), "cudaEventCreate");
  }
  auto launch = [&](std::size_t bytes, bool in_place) {
    const std::size_t count = bytes / 4, shard = count / static_cast<std::size_t>(ranks);
    n.check(n.ncclGroupStart_(), "ncclGroupStart");
    for (int r = 0; r < ranks; ++r) {
      Rank& x = rs[static_cast<std::size_t>(r)];
      void* out = in_place ? x.send->p : x.recv->p;
      const char* base = static_cast<const char*>(x.send->p);
      switch (op) {
        case NcclCollective::all_reduce: n.check(n.ncclAllReduce_(x.send->p, out, count, ncclFloat, ncclSum, x.comm, x.stream), "ncclAllReduce"); break;
        case NcclCollective::all_gather:  // in place: the shard already sits at its rank's offset of the output
          n.check(n.ncclAllGather_(in_place ? base + static_cast<std::size_t>(r) * shard * 4 : base, out, shard, ncclFloat, x.comm, x.stream),
                  "ncclAllGather");
          break;
        case NcclCollective::reduce_scatter:
          n.check(n.ncclReduceScatter_(x.send->p, in_place ? static_cast<char*>(x.send->p) + static_cast<std::size_t>(r) * shard * 4 : out, shard,
                                       ncclFloat, ncclSum, x.comm, x.stream),
                  "ncclReduceScatter");
          break;
        case NcclCollective::all_to_all:  // as nccl-tests: a send and a receive of one shard per peer
          for (int peer = 0; peer < ranks; ++peer) {
            n.check(n.ncclSend_(base + static_cast<std::size_t>(peer) * shard * 4, shard, ncclFloat, peer, x.comm, x.stream), "ncclSend");
            n.check(n.ncclRecv_(static_cast<char*>(x.recv->p) + static_cast<std::size_t>(peer) * shard * 4, shard, ncclFloat, peer, x.comm,
                                x.stream),
                    "ncclRecv");
          }
          break;
      }
    }
    n.check(n.ncclGroupEnd_(), "ncclGroupEnd");
  };
  auto time = [&](std::size_t bytes, bool in_place) {
    for (int i = 0; i < warmup; ++i) launch(bytes, in_place);
    for (Rank& x : rs) {
      check(cudaSetDevice(x.device), "cudaSetDevice");
      check(cudaEventRecord(x.start, x.stream), "cudaEventRecord");
    }
    for (int i = 0; i < iterations; ++i) launch(bytes, in_place);
    double slowest = 0;
    for (Rank& x : rs) {
      check(cudaSetDevice(x.device), "cudaSetDevice");
      check(cudaEventRecord(x.stop, x.stream), "cudaEventRecord");
    }
    for (Rank& x : rs) {
      check(cudaEventSynchronize(x.stop), "cudaEventSynchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, x.start, x.stop), "cudaEventElapsedTime");
      slowest = std::max(slowest, static_cast<double>(ms) * 1e-3 / iterations);
    }
    return slowest;
  };
  std::vector<NcclTiming> out;
  // Whole float shards on every rank: sizes are multiples of 4·ranks bytes.
  const std::size_t unit = 4 * static_cast<std::size_t>(ranks);
  for (double b = std::max(min_bytes, static_cast<double>(unit)); b <= max_bytes; b *= 2) {
    const std::size_t bytes = static_cast<std::size_t>(b) / unit * unit;
    if (bytes == 0 || bytes > biggest) continue;
    bool in_place_ok = op != NcclCollective::all_to_all;  // nccl-tests runs all-to-all out of place only
    out.push_back({static_cast<double>(bytes), time(bytes, false), in_place_ok ? time(bytes, true) : 0.0});
  }
  for (Rank& x : rs) {
    cudaSetDevice(x.device);
    cudaEventDestroy(x.start);
    cudaEventDestroy(x.stop);
    cudaStreamDestroy(x.stream);
    n.ncclCommDestroy_(x.comm);
  }
  return out;
}

}  // namespace plumb::kernels
