// Reading a large profiler trace: a synthetic Kineto trace of PLUMB_TRACE_BENCH_MB megabytes (default
// 1024) is written to the temporary folder — CPU ops, launch calls and kernels in the proportions of
// the DeepSeek-V3 trace (one GPU kernel in 15 events, each with its launch call; one kernel in five
// annotated as a collective is), the kernel names cycling through that trace's families — then streamed through plumb's reader and summarised. Prints the read rate and the
// process's peak resident memory before and after (the target: a 1 GB trace in under 1 GB).
#include <benchmark/benchmark.h>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sys/resource.h>
#include <unistd.h>

#include "validate/trace/trace_summary.hpp"

namespace {

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

std::filesystem::path write_trace(double megabytes) {
  const std::filesystem::path p = std::filesystem::temp_directory_path() / fmt::format("plumb-bench-trace-{}.json", getpid());
  std::ofstream out(p);
  const char* kernels[] = {"void cutlass::device_kernel<dpsk::grouped_gemm::cuda::m_grouped_fp8_ptp128c::GemmKernel>(dpsk::grouped_gemm::cuda::m_grouped_fp8_ptp128c::Params)",
                           "void dpsk::ep::internode::combine<false, 8, __nv_bfloat16, 8, 2, 16, 24>(int4*, float*, bool*)",
                           "void flash::compute_attn_ws<Flash_fwd_kernel_traits<192, 128, 128, 12, 2, false, 1, cutlass::bfloat16_t>>(Flash_fwd_params)",
                           "void cuda::per_token_cast_to_fp8_with_channels<__nv_bfloat16, 128, false, 128, false>(__nv_bfloat16 const*, int)",
                           "void layer_norm::ln_fwd_kernel<layer_norm::Kernel_traits<__nv_bfloat16, __nv_bfloat16, float, 7168>>(layer_norm::FwdParams)"};
  out << "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H800\"}], \"traceEvents\": [\n";
  const double bytes = megabytes * 1024 * 1024;
  long long ts = 1740461679471346, i = 0;
  while (static_cast<double>(out.tellp()) < bytes) {
    if (i % 15 == 0)
      out << fmt::format(R"(  {{"ph": "X", "cat": "kernel", "name": "{}", "pid": 0, "tid": 7, "ts": {}, "dur": {}, "args": {{"External id": {}, "device": 0, "stream": {}, "correlation": {}, "grid": [4096, 1, 1], "block": [128, 1, 1]{}}}}},)",
                         kernels[i / 15 % 5], ts, 20 + i % 37, i, i % 2 ? 7 : 27, i,
                         i / 15 % 5 == 1 ? R"(, "Collective name": "_allgather_base", "In msg nelems": 1048576, "Out msg nelems": 8388608, "Group size": 8, "dtype": "BFloat16", "Process Group Name": "0", "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]")"
                                         : "")
          << "\n";
    else if (i % 15 == 1)  // the launch call of the kernel before it
      out << fmt::format(R"(  {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1402, "tid": 1402, "ts": {}, "dur": 4, "args": {{"External id": {}, "cbid": 211, "correlation": {}}}}},)",
                         ts - 40, i - 1, i - 1)
          << "\n";
    else
      out << fmt::format(R"(  {{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1402, "tid": 1402, "ts": {}, "dur": 5, "args": {{"External id": {}, "Sequence number": {}, "Fwd thread id": 0, "Record function id": 0, "Ev Idx": {}}}}},)",
                         ts, i, i, i)
          << "\n";
    ts += 3, ++i;
  }
  out << R"(  {"ph": "i", "name": "end", "pid": 0, "tid": 0, "ts": 0, "s": "g"}]})" << "\n";
  return p;
}

void BM_ReadTrace(benchmark::State& state) {
  const char* env = std::getenv("PLUMB_TRACE_BENCH_MB");
  const double megabytes = env ? std::atof(env) : 1024;
  const std::filesystem::path p = write_trace(megabytes);
  const double size = static_cast<double>(std::filesystem::file_size(p));
  const double before = peak_rss_mib();
  plumb::KernelClassifier classes = plumb::KernelClassifier::bundled();
  plumb::TraceSummary summary;
  for (auto _ : state) summary = plumb::summarize_trace(plumb::read_gpu_trace(p.string()), classes);
  state.counters["trace_MiB"] = size / (1 << 20);
  state.counters["MiB_per_s"] = benchmark::Counter(size / (1 << 20), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["gpu_events"] = static_cast<double>(summary.gpu_events);
  state.counters["launches_joined"] = static_cast<double>(summary.launches_known);
  state.counters["collectives"] = static_cast<double>(summary.collectives.size());
  state.counters["peak_RSS_MiB_before"] = before;
  state.counters["peak_RSS_MiB_after"] = peak_rss_mib();
  std::filesystem::remove(p);
}
BENCHMARK(BM_ReadTrace)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
