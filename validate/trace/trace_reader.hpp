#pragma once
// A PyTorch profiler trace (Chrome/Kineto JSON as torch.profiler writes it, plain or gzip) read as a
// stream: the file is never held whole, only its GPU events (kernels, copies, memsets), each a few
// dozen bytes with its name kept once. Either the object form {"traceEvents": [...], ...} or a bare
// array of events.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace plumb {

struct GpuEvent {
  std::uint32_t name = 0;   // index into GpuTrace::names
  std::int32_t stream = 0;  // CUDA stream (args.stream, else the event's tid)
  std::int32_t device = 0;  // args.device, else the pid
  double start_us = 0, duration_us = 0;
  std::int64_t external_id = -1;  // args["External id"]: the CPU op that launched it (-1: none)
  double launch_us = -1;          // when the host's launch call (cudaLaunchKernel, cuLaunchKernel, cudaMemcpyAsync, …
                                  // joined by args.correlation) began; -1: the trace has none for it
};

// A collective's kernel as PyTorch's NCCL process group annotates it (args "Collective name", "In msg
// nelems", "Out msg nelems", "dtype", "Group size", "Process Group Ranks").
struct CollectiveArgs {
  std::size_t event = 0;       // index into GpuTrace::events
  std::string collective;      // "allreduce", "_allgather_base", "_reduce_scatter_base", "all_to_all", "send", …
  double in_elements = 0, out_elements = 0;
  int element_bytes = 0;       // of its dtype (BFloat16 2, Float 4, …)
  std::int64_t group_size = 0;
  // Its ranks: the lowest and highest, and the stride between consecutive ones where they are evenly
  // spaced (0: unevenly, or the trace did not say: lowest = highest = -1).
  std::int64_t lowest_rank = -1, highest_rank = -1, rank_stride = 0;
  double bytes() const { return (in_elements > out_elements ? in_elements : out_elements) * element_bytes; }
};

// A GEMM's inputs' dtype as the op recorded it: c10::BFloat16, c10::Half, c10::Float8_e4m3fn or _e5m2, float.
enum class GemmInputType : std::uint8_t { bf16, fp16, fp8, fp32 };
const char* gemm_input_type_name(GemmInputType t);  // "bf16", "fp16", "fp8", "fp32"

// A GEMM's shape as a CPU op recorded it (torch.profiler with record_shapes): C[m×n] = A[m×k]·B[k×n],
// `groups` of them (a batched GEMM).
struct GemmOpShape {
  double m = 0, n = 0, k = 0, groups = 1;
  GemmInputType dtype = GemmInputType::bf16;
};

// A host call that put work on a stream (kernel launch, asynchronous copy or memset): when it began and
// on which host thread.
struct HostLaunch {
  double start_us = 0;
  std::int64_t thread = -1;
};

struct GpuTrace {
  std::string file;
  std::string device_name;  // deviceProperties[0].name, where the trace has it
  std::vector<std::string> names;
  std::vector<GpuEvent> events;  // in file order
  // The shapes of the GEMM ops (aten::mm, addmm, bmm, baddbmm, _scaled_mm) by External id, where the
  // trace recorded shapes; their kernels carry the same id.
  std::unordered_map<std::int64_t, GemmOpShape> gemm_shapes;
  // The collectives' kernels that carry PyTorch's annotation of their message (whole and positive sizes,
  // a known dtype); others are in `events` only.
  std::vector<CollectiveArgs> collectives;
  std::vector<HostLaunch> launches;  // every launch call, in file order
  std::uint64_t events_seen = 0; // every event of the file, GPU or not
  std::uint64_t bytes_read = 0;  // of the file as stored (compressed where it is)
};

// Throws InputError (file and byte offset) on malformed JSON or a file without trace events.
GpuTrace read_gpu_trace(const std::string& path);

}  // namespace plumb
