#pragma once
// A PyTorch profiler trace (Chrome/Kineto JSON as torch.profiler writes it, plain or gzip) read as a
// stream: the file is never held whole, only its GPU events (kernels, copies, memsets), each a few
// dozen bytes with its name kept once. Either the object form {"traceEvents": [...], ...} or a bare
// array of events.
#include <cstdint>
#include <string>
#include <vector>

namespace plumb {

struct GpuEvent {
  std::uint32_t name = 0;   // index into GpuTrace::names
  std::int32_t stream = 0;  // CUDA stream (args.stream, else the event's tid)
  std::int32_t device = 0;  // args.device, else the pid
  double start_us = 0, duration_us = 0;
};

struct GpuTrace {
  std::string file;
  std::string device_name;  // deviceProperties[0].name, where the trace has it
  std::vector<std::string> names;
  std::vector<GpuEvent> events;  // in file order
  std::uint64_t events_seen = 0; // every event of the file, GPU or not
  std::uint64_t bytes_read = 0;  // of the file as stored (compressed where it is)
};

// Throws InputError (file and byte offset) on malformed JSON or a file without trace events.
GpuTrace read_gpu_trace(const std::string& path);

}  // namespace plumb
