// Profiler traces (issue 25): the streamed reader and the class totals against an independent reading
// of the real DeepSeek-V3 DualPipe trace (ground-truth.md §D), and its refusals.
#include <doctest/doctest.h>

#include <array>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <set>
#include <unistd.h>
#include <zlib.h>

#include "models/input/catalogue.hpp"
#include "models/input/diagnostics.hpp"
#include "models/costs/step_costs.hpp"
#include "models/hardware/hardware.hpp"
#include "validate/run/trace_calibrate.hpp"
#include "validate/run/trace_collectives.hpp"
#include "validate/run/trace_compare.hpp"
#include "validate/calibrate/calibrate.hpp"
#include "validate/trace/trace_summary.hpp"

namespace fs = std::filesystem;
using namespace plumb;

namespace {

const std::string kTrace = (data_dir() / "tests/fixtures/traces/deepseek-v3-train-dualpipe-chunk.json.gz").string();

// The whole file inflated at once: the independent path (zlib in one go, nlohmann's DOM parser).
std::string inflate_all(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::string text;
  char buffer[1 << 16];
  for (int n; (n = gzread(f, buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  gzclose(f);
  return text;
}

fs::path scratch(const std::string& name, const std::string& text) {
  fs::path p = fs::temp_directory_path() / ("plumb-trace-" + std::to_string(getpid()) + "-" + name);
  std::ofstream(p) << text;
  return p;
}

}  // namespace

TEST_CASE("the DeepSeek-V3 trace: class totals equal an independent sum over the file, and its span is the published 129 ms") {
  KernelClassifier classes = KernelClassifier::bundled();
  const TraceSummary s = summarize_trace(read_gpu_trace(kTrace), classes);
  // Independently: the DOM of the inflated file, every complete GPU event summed by its class.
  const Json doc = Json::parse(inflate_all(kTrace));
  KernelClassifier again = KernelClassifier::bundled();
  std::map<std::string, double> expected;
  std::map<std::string, std::uint64_t> counts;
  std::uint64_t gpu_events = 0;
  double first = 1e300, last = -1e300;
  std::vector<std::pair<std::int64_t, std::int64_t>> compute, communication;
  for (const Json& e : doc["traceEvents"]) {
    const std::string cat = e.value("cat", "");
    if (e.value("ph", "") != "X" || (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset")) continue;
    ++gpu_events;
    const std::optional<std::size_t> c = again.classify(e["name"].get<std::string>());
    REQUIRE_MESSAGE(c, "no class for " << e["name"]);
    const KernelClass& k = again.classes()[*c];
    expected[k.name] += e["dur"].get<double>();
    ++counts[k.name];
    const auto ts = e["ts"].get<std::int64_t>(), dur = e["dur"].get<std::int64_t>();
    first = std::min(first, static_cast<double>(ts));
    last = std::max(last, static_cast<double>(ts + dur));
    if (k.kind == TimelineRole::communication) communication.emplace_back(ts, ts + dur);
    else if (k.kind == TimelineRole::compute) compute.emplace_back(ts, ts + dur);
  }
  CHECK(s.events_seen == doc["traceEvents"].size());
  CHECK(s.gpu_events == gpu_events);
  CHECK(s.gpu_events == 983);  // 963 kernels, 8 copies, 12 memsets
  CHECK(s.device_name == "NVIDIA H800");
  CHECK(s.unknown.empty());    // the table knows every kernel of this trace
  CHECK(s.span_us == doctest::Approx(last - first));
  CHECK(s.span_us == doctest::Approx(129012));  // ground-truth.md §D: "span of the pair ≈129 ms"
  REQUIRE(s.classes.size() == expected.size());
  for (const ClassTotal& c : s.classes) {
    INFO(c.name);
    CHECK(c.time_us == expected.at(c.name));  // whole microseconds: the sums are exact
    CHECK(c.kernels == counts.at(c.name));
  }
  // DeepEP's combine: eight kernels, 49.448 ms, all on the communication stream 27.
  const auto combine = std::find_if(s.classes.begin(), s.classes.end(), [](const ClassTotal& c) { return c.name == "ep_combine"; });
  REQUIRE(combine != s.classes.end());
  CHECK(combine->time_us == 49448);
  CHECK(combine->streams.size() == 1);
  CHECK(combine->streams.count(27) == 1);
  // The overlap of communication with compute, counted microsecond by microsecond.
  const auto t0 = static_cast<std::int64_t>(first);
  std::vector<char> busy_compute(static_cast<std::size_t>(last - first)), busy_comm(busy_compute.size());
  for (const auto& [a, b] : compute)
    for (std::int64_t t = a; t < b; ++t) busy_compute[static_cast<std::size_t>(t - t0)] = 1;
  for (const auto& [a, b] : communication)
    for (std::int64_t t = a; t < b; ++t) busy_comm[static_cast<std::size_t>(t - t0)] = 1;
  double both = 0, comm = 0, comp = 0;
  for (std::size_t i = 0; i < busy_comm.size(); ++i) {
    both += busy_compute[i] && busy_comm[i];
    comm += busy_comm[i];
    comp += busy_compute[i];
  }
  CHECK(s.overlap_us == both);
  CHECK(s.communication_busy_us == comm);
  CHECK(s.compute_busy_us == comp);
  // The same file uncompressed reads the same.
  const fs::path plain = scratch("plain.json", inflate_all(kTrace));
  const TraceSummary p = summarize_trace(read_gpu_trace(plain.string()), classes);
  CHECK(p.gpu_events == s.gpu_events);
  CHECK(p.overlap_us == s.overlap_us);
  fs::remove(plain);
}

TEST_CASE("the DeepSeek-V3 trace's gaps by cause: each kernel's launch call joined by correlation, as an independent reading finds them") {
  KernelClassifier classes = KernelClassifier::bundled();
  const TraceSummary s = summarize_trace(read_gpu_trace(kTrace), classes);
  // Independently: launch calls by correlation from the DOM; per stream, each kernel after the first
  // either launched before the stream's last end (a queued gap) or after it (a wait on the host).
  const Json doc = Json::parse(inflate_all(kTrace));
  std::map<std::int64_t, double> launch;
  std::map<std::int64_t, std::vector<double>> by_thread;
  for (const Json& e : doc["traceEvents"]) {
    const std::string cat = e.value("cat", ""), name = e.value("name", "");
    if ((cat == "cuda_runtime" || cat == "cuda_driver") &&
        (name.find("Launch") != std::string::npos || name.find("Memcpy") != std::string::npos || name.find("Memset") != std::string::npos)) {
      launch.emplace(e["args"]["correlation"].get<std::int64_t>(), e["ts"].get<double>());
      by_thread[e["tid"].get<std::int64_t>()].push_back(e["ts"].get<double>());
    }
  }
  // The host's pace: two launching threads (DualPipe's forward and autograd's backward), a median ~30 us
  // between one launch call and the next on each.
  std::vector<double> intervals;
  std::size_t calls = 0;
  for (auto& [thread, starts] : by_thread) {
    std::sort(starts.begin(), starts.end());
    calls += starts.size();
    for (std::size_t i = 1; i < starts.size(); ++i) intervals.push_back(starts[i] - starts[i - 1]);
  }
  std::sort(intervals.begin(), intervals.end());
  CHECK(s.launch_threads == 2);
  CHECK(s.launch_calls == calls);
  CHECK(s.launch_interval_us == doctest::Approx(intervals.size() % 2 ? intervals[intervals.size() / 2]
                                                                     : (intervals[intervals.size() / 2 - 1] + intervals[intervals.size() / 2]) / 2));
  CHECK(s.launch_interval_us >= 25);
  CHECK(s.launch_interval_us <= 35);
  std::map<std::int64_t, std::vector<std::array<double, 3>>> streams;  // start, end, launch
  for (const Json& e : doc["traceEvents"]) {
    const std::string cat = e.value("cat", "");
    if (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset") continue;
    const double ts = e["ts"].get<double>();
    streams[e["args"]["stream"].get<std::int64_t>()].push_back({ts, ts + e["dur"].get<double>(), launch.at(e["args"]["correlation"])});
  }
  std::map<std::int64_t, std::pair<std::vector<double>, double>> expected;  // queued gaps, host wait
  for (auto& [stream, kernels] : streams) {
    std::sort(kernels.begin(), kernels.end());
    double end = kernels[0][1];
    for (std::size_t i = 1; i < kernels.size(); ++i) {
      const double gap = kernels[i][0] - end;
      if (gap >= 0) {
        if (kernels[i][2] < end) expected[stream].first.push_back(gap);
        else expected[stream].second += std::min(gap, kernels[i][2] - end);
      }
      end = std::max(end, kernels[i][1]);
    }
  }
  CHECK(s.launches_known == s.gpu_events);  // every kernel, copy and memset of this trace has its launch call
  std::vector<double> pooled;
  double waits = 0;
  for (const StreamTotal& st : s.streams) {
    INFO(st.stream);
    std::vector<double> gaps = expected[st.stream].first;
    std::sort(gaps.begin(), gaps.end());
    CHECK(st.queued_gaps == gaps.size());
    CHECK(st.host_wait_us == doctest::Approx(expected[st.stream].second));
    if (!st.communication) pooled.insert(pooled.end(), gaps.begin(), gaps.end()), waits += st.host_wait_us;
  }
  // The main compute stream 7: 917 queued gaps, most of them 2 us (the trace's clock is in whole us).
  const auto seven = std::find_if(s.streams.begin(), s.streams.end(), [](const StreamTotal& st) { return st.stream == 7; });
  REQUIRE(seven != s.streams.end());
  CHECK(seven->queued_gaps == 917);
  CHECK(seven->median_queued_gap_us == 2);
  CHECK(seven->host_wait_us == 350);
  std::sort(pooled.begin(), pooled.end());
  CHECK(s.kernel_gaps == pooled.size());
  CHECK(s.kernel_gap_us == pooled[pooled.size() / 2]);
  // Waiting on the host counts only where no compute kernel ran: at most the streams' waits summed.
  CHECK(s.host_wait_us > 0);
  CHECK(s.host_wait_us <= waits);
}

TEST_CASE("a trace of PyTorch's NCCL process group: the annotated collectives, their groups' nodes, and the fabric and launch gap fitted to them") {
  const GpuTrace raw = read_gpu_trace((data_dir() / "tests/fixtures/traces/nccl-kineto.json").string());
  KernelClassifier classes = KernelClassifier::bundled();
  const TraceSummary s = summarize_trace(raw, classes);
  // make-nccl-kineto.py: 7 all-gather and 6 reduce-scatter sizes three times each, an all-reduce of one size
  // three times, a barrier.
  REQUIRE(s.collectives.size() == 43);
  const CollectiveArgs& gather = s.collectives.front().args;
  CHECK(gather.collective == "_allgather_base");
  CHECK(gather.group_size == 8);
  CHECK(gather.element_bytes == 2);
  CHECK(gather.out_elements == 8 * gather.in_elements);
  CHECK(gather.bytes() == 8388608);
  CHECK(gather.lowest_rank == 0);
  CHECK(gather.highest_rank == 7);
  CHECK(gather.rank_stride == 1);
  CHECK(nodes_of_group(gather, 8) == 1);
  CHECK(nodes_of_group(gather, 4) == 2);
  const CollectiveArgs& scatter = s.collectives[21].args;
  CHECK(scatter.collective == "_reduce_scatter_base");
  CHECK(scatter.rank_stride == 8);
  CHECK(nodes_of_group(scatter, 8) == 2);
  // The launch gaps: 289 of 3.0 us, ten kernels launched 40 us after their stream went idle.
  CHECK(s.kernel_gaps == 289);
  CHECK(s.kernel_gap_us == doctest::Approx(3.0));
  CHECK(s.host_wait_us == doctest::Approx(400.0));
  // As nccl-tests logs: the fastest kernel of each size, the delayed ones (×1.3, ×2.5) left aside.
  const TraceCollectiveLogs logs = collective_logs_from_trace(s, 8);
  REQUIRE(logs.logs.size() == 2);
  CHECK(logs.kernels == 39);
  CHECK(logs.left_out.size() == 2);  // the barrier, and the all-reduce of one size
  REQUIRE(logs.rows.size() == 14);      // every size of the three priced collectives
  for (const TraceCollectiveRow& r : logs.rows) {
    INFO(collective_op_name(r.op) << " " << r.bytes);
    CHECK(r.kernels == 3);                                    // each size three times…
    CHECK(r.median_s == doctest::Approx(1.3 * r.fastest_s));  // …at ×1, ×1.3 and ×2.5
    if (r.op == CollectiveOp::all_gather && r.bytes >= 5e8) CHECK(r.bus_bandwidth() / 1e9 == doctest::Approx(360 * 0.985).epsilon(0.02));
  }
  const NcclTestsLog& ag = logs.logs[0].op == CollectiveOp::all_gather ? logs.logs[0] : logs.logs[1];
  const NcclTestsLog& rs = logs.logs[0].op == CollectiveOp::all_gather ? logs.logs[1] : logs.logs[0];
  CHECK(ag.ranks == 8);
  CHECK(ag.nodes == 1);
  CHECK(ag.rows.size() == 7);
  CHECK(rs.ranks == 2);
  CHECK(rs.nodes == 2);
  // Fitted as nccl-tests logs: the bandwidths and latencies the kernels' times were drawn from.
  Diagnostics d;
  SourceFile src{"profile", {}, &d, {}};
  const Json fabric_raw = load_profile_document(data_dir() / "hw_profiles/fabrics/dgx-h100-ndr.json", true, src);
  std::optional<GpuSpec> gpu = read_gpu(Json("h100-sxm"), "", src);
  std::optional<FabricSpec> fabric = read_fabric(Json("dgx-h100-ndr"), "", src);
  REQUIRE(d.empty());
  const Calibration c = calibrate_fabric(fabric_raw, *gpu, *fabric, logs.logs);
  REQUIRE(c.collectives.size() == 2);
  for (const CollectiveFit& f : c.collectives) {
    const bool network = f.log->nodes > 1;
    INFO(f.field);
    CHECK(f.field == (network ? "nic_effective" : "nvlink_effective_per_gpu"));
    CHECK(1 / f.fit.beta == doctest::Approx(network ? 45e9 : 360e9).epsilon(0.001));
    CHECK(f.fit.alpha == doctest::Approx(network ? 40e-6 : 20e-6).epsilon(0.001));
  }
  // plumb compare beside the trace: each collective's fastest kernel against plumb's model, at the fabric
  // as bundled and as calibrated (within the calibration's own RMS, a few percent, at every size).
  Job compared = load_scenario(data_dir() / "scenarios/llama3-405b-16k-h100.json");
  REQUIRE(compare_trace(compared, s, 0).collectives.size() == 14);  // the all-reduce's one size too
  compared.cluster.fabric = *read_fabric(c.profile, "", src);
  REQUIRE(d.empty());
  for (const TraceComparison::Collective& r : compare_trace(compared, s, 0).collectives) {
    INFO(r.op << " " << r.bytes);
    if (r.op == "all_reduce") continue;  // not fitted: its one size
    CHECK(r.predicted == doctest::Approx(r.measured).epsilon(r.bytes < 2e7 ? 0.05 : 0.02));
  }
  // And the GPU profile's kernel overhead from the gaps.
  const Job job = load_scenario(data_dir() / "scenarios/llama3-405b-16k-h100.json");
  const Json gpu_raw = load_profile_document(data_dir() / "hw_profiles/gpus/h100-sxm.json", false, src);
  const TraceCalibration t = calibrate_from_trace(gpu_raw, job, s, 0);
  REQUIRE(t.kernel_overhead);
  CHECK(*t.kernel_overhead == doctest::Approx(3e-6));
  CHECK(t.kernel_gaps == 289);
  CHECK(t.profile["kernel_overhead"] == "3.000us");
}

TEST_CASE("a collective's group ranks as PyTorch writes them: whole, cut short at a stride, uneven, or at odds with the group") {
  auto read = [](const std::string& ranks, int group) {
    const std::string text = fmt::format(
        R"({{"traceEvents": [{{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL", "ts": 1, "dur": 5, )"
        R"("args": {{"stream": 20, "Collective name": "allgather", "In msg nelems": 16, "Out msg nelems": 128, "dtype": "Float", )"
        R"("Group size": {}, "Process Group Ranks": "{}"}}}}]}})",
        group, ranks);
    const fs::path p = scratch("ranks.json", text);
    GpuTrace t = read_gpu_trace(p.string());
    fs::remove(p);
    REQUIRE(t.collectives.size() == 1);
    CHECK(t.collectives[0].bytes() == 512);
    return t.collectives[0];
  };
  const CollectiveArgs cut = read("[0, 8, 16, 24, ...]", 32);
  CHECK(cut.lowest_rank == 0);
  CHECK(cut.highest_rank == 248);
  CHECK(cut.rank_stride == 8);
  CHECK(nodes_of_group(cut, 8) == 32);
  const CollectiveArgs uneven = read("[0, 1, 8, 9]", 4);
  CHECK(uneven.rank_stride == 0);
  CHECK(uneven.highest_rank == 9);
  CHECK(nodes_of_group(uneven, 8) == 2);
  CHECK(nodes_of_group(read("[3, 4, 5, 6]", 4), 4) == 2);  // 3 on the first node of 4, 4-6 on the second
  // At odds with its group (or cut short unevenly): where the ranks lie is unknown, and the group is
  // taken to fill the fewest nodes.
  for (const CollectiveArgs& a : {read("[0, 1, 2]", 4), read("[0, 1, 5, ...]", 8), read("", 16)}) {
    CHECK(a.lowest_rank == -1);
    CHECK(nodes_of_group(a, 8) == (a.group_size + 7) / 8);
  }
}

TEST_CASE("a trace's unknown kernels are listed, never dropped; bad traces and bad class tables are refused with where") {
  const fs::path t = scratch("small.json", R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "my_new_kernel<128>", "pid": 0, "tid": 7, "ts": 100, "dur": 30, "args": {"stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "pid": 0, "tid": 9, "ts": 110, "dur": 50, "args": {"stream": 9}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 90, "dur": 80},
    {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32", "pid": 0, "tid": 7, "ts": 140, "dur": 40, "args": {"stream": 7}}]})");
  KernelClassifier classes = KernelClassifier::bundled();
  const TraceSummary s = summarize_trace(read_gpu_trace(t.string()), classes);
  CHECK(s.events_seen == 4);
  CHECK(s.gpu_events == 3);
  REQUIRE(s.unknown.size() == 1);
  CHECK(s.unknown[0].name == "my_new_kernel<128>");
  CHECK(s.unknown_time_us == 30);
  CHECK(s.span_us == 80);                  // 100 to 180
  CHECK(s.communication_busy_us == 50);    // 110 to 160
  CHECK(s.overlap_us == 20 + 20);          // under the unknown kernel (110–130) and the GEMM (140–160)
  CHECK(s.by_plumb_op.at("gemm") == 40);
  fs::remove(t);

  const fs::path bad = scratch("bad.json", R"({"traceEvents": [{"ph": "X", "name": )");
  CHECK_THROWS_WITH_AS(read_gpu_trace(bad.string()), doctest::Contains("not a profiler trace: malformed JSON"), InputError);
  const fs::path none = scratch("none.json", R"({"schemaVersion": 1})");
  CHECK_THROWS_WITH_AS(read_gpu_trace(none.string()), doctest::Contains("no \"traceEvents\" list"), InputError);
  CHECK_THROWS_WITH_AS(read_gpu_trace("no/such/trace.json"), doctest::Contains("cannot read the file"), InputError);
  const fs::path table = scratch("classes.json", R"({"rules": [{"class": "gemm", "pattern": "gemm(", "kind": "compute", "plumb_op": "gemm", "source": "x"}]})");
  CHECK_THROWS_WITH_AS(KernelClassifier::from_file(table.string()), doctest::Contains("/rules/0/pattern: not a regular expression"), InputError);
  for (const fs::path& p : {bad, none, table}) fs::remove(p);
}

TEST_CASE("plumb's DualPipe F&B pair for the traced setup beside the DeepSeek-V3 trace: the span within 15%, class by class as priced") {
  Job job = load_scenario(data_dir() / "tests/fixtures/traces/deepseek-v3-dualpipe-chunk.json");
  KernelClassifier classes = KernelClassifier::bundled();
  const TraceSummary trace = summarize_trace(read_gpu_trace(kTrace), classes);
  const TraceComparison c = compare_trace(job, trace, 1);
  CHECK(c.layers == 4);
  REQUIRE(c.pair);
  // The prediction is the step's own F&B pair: stage 1's forward beside stage 2's backward, on the
  // traced rank's own chip (not at the pace of the job's slowest).
  Job own = job;
  own.cluster.gpu.slowest_chip_scale = 1.0;
  const StepCosts costs = step_costs(own);
  CHECK(c.predicted_span == costs.stages[1].fb_overlap);
  CHECK(c.measured_span == doctest::Approx(0.129012));
  // A regression guard on a real measurement, not a fit: −14.4% today (the same shortfall as the whole
  // DeepSeek-V3 step in the published suite); the classes show where (docs/fidelity.md).
  CHECK(std::abs(c.predicted_span / c.measured_span - 1) < 0.15);
  double communication = 0;
  for (CommKind k : {CommKind::tp, CommKind::ep, CommKind::cp}) communication += costs.stages[1].forward.comm(k) + costs.stages[1].backward.comm(k);
  for (const TraceClassComparison& r : c.classes) {
    INFO(r.op);
    CHECK(r.measured == doctest::Approx(trace.by_plumb_op.at(r.op) * 1e-6));
    if (r.op == "communication") CHECK(r.predicted == doctest::Approx(communication));
    CHECK(r.predicted > 0);
  }
  // Streams: the trace's roles (96.3% of its communication under compute) against the simulated F&B
  // pair; each side's rows are consistent with each other.
  REQUIRE(c.streams.size() == 6);
  auto row = [&](const std::string& name) {
    for (const TraceClassComparison& r : c.streams)
      if (r.op == name) return r;
    FAIL("no row " << name);
    return TraceClassComparison{};
  };
  CHECK(row("compute busy").measured == doctest::Approx(trace.compute_busy_us * 1e-6));
  CHECK(row("compute waiting on the host").measured == doctest::Approx(trace.host_wait_us * 1e-6));
  CHECK(row("compute waiting on the host").predicted == 0);
  CHECK(row("communication under compute").measured / row("communication busy").measured == doctest::Approx(0.963).epsilon(0.001));
  const StreamPrediction sp = predict_streams(job, 1);
  CHECK(sp.overlap <= std::min(sp.compute_busy, sp.communication_busy));
  CHECK(sp.span >= std::max(sp.compute_busy, sp.communication_busy));
  CHECK(row("compute busy").predicted + row("compute idle").predicted == doctest::Approx(sp.span));
  CHECK(row("communication under compute").predicted + row("communication exposed").predicted == doctest::Approx(sp.communication_busy));
  // DualPipe hides most of the pair's all-to-all under the other direction's compute, as the trace shows.
  CHECK(sp.overlap / sp.communication_busy > 0.8);
  CHECK_THROWS_WITH_AS(compare_trace(job, trace, 9), doctest::Contains("stage 9 is not one of the 4 stages"), InputError);
}

TEST_CASE("calibrated from the DeepSeek-V3 trace, the chunk's classes meet it and the span, never fitted, comes within 5%") {
  Job job = load_scenario(data_dir() / "tests/fixtures/traces/deepseek-v3-dualpipe-chunk.json");
  KernelClassifier classes = KernelClassifier::bundled();
  const TraceSummary trace = summarize_trace(read_gpu_trace(kTrace), classes);
  Diagnostics d;
  SourceFile src{"profile", {}, &d, {}};
  const Json raw = load_profile_document(data_dir() / "hw_profiles/gpus/h800-sxm-deepseek-2024.json", false, src);
  REQUIRE(d.empty());
  const TraceCalibration c = calibrate_from_trace(raw, job, trace, 1);
  REQUIRE(c.fits.size() == 4);
  for (const TraceFit& f : c.fits) {
    INFO(f.field);
    CHECK(f.measured > 0);
    CHECK_FALSE(f.capped);
    CHECK(f.predicted_after == doctest::Approx(f.measured).epsilon(0.005));
    CHECK(c.profile["sources"][f.field].get<std::string>().find("calibrated by plumb calibrate --trace") == 0);
  }
  CHECK(c.span_before == doctest::Approx(c.measured_span * (1 - 0.144)).epsilon(0.01));
  // The framework's host time a plumb kernel: the trace's launch calls at their pace over plumb's kernels;
  // priced with it, the GPU waits on the host for part of the pair, as the trace's did (1.9 ms).
  REQUIRE(c.host_overhead);
  CHECK(*c.host_overhead == doctest::Approx(static_cast<double>(trace.launch_calls) * trace.launch_interval_us * 1e-6 /
                                            static_cast<double>(c.plumb_kernels)));
  CHECK(c.host_wait_predicted > 0);
  CHECK(c.host_wait_predicted < trace.host_wait_us * 1e-6);
  // The span is the schedule's overlap of the pair with the calibrated kernel rates: predicted, not fitted.
  CHECK(std::abs(c.span_after / c.measured_span - 1) < 0.05);
  // plumb compare with the calibrated profile: every fitted class and the span within 10% of the trace.
  std::optional<GpuSpec> gpu = read_gpu(c.profile, "", src);
  REQUIRE(gpu);
  job.cluster.gpu = *gpu;
  const TraceComparison after = compare_trace(job, trace, 1);
  CHECK(std::abs(after.predicted_span / after.measured_span - 1) < 0.10);
  for (const TraceClassComparison& r : after.classes)
    if (r.op != "communication") {
      INFO(r.op);
      CHECK(std::abs(r.predicted / r.measured - 1) < 0.10);
    }
}

TEST_CASE("compare --trace --timeline: the trace's kernels and plumb's F&B pair side by side in one Chrome trace") {
  Job job = load_scenario(data_dir() / "tests/fixtures/traces/deepseek-v3-dualpipe-chunk.json");
  KernelClassifier classes = KernelClassifier::bundled();
  const GpuTrace trace = read_gpu_trace(kTrace);
  const Json t = side_by_side_timeline(job, trace, classes, 1);
  std::size_t measured = 0, predicted = 0;
  double predicted_end = 0;
  for (const Json& e : t["traceEvents"]) {
    if (e["ph"] != "X") continue;
    (e["pid"] == 1 ? measured : predicted) += 1;
    if (e["pid"] == 2) predicted_end = std::max(predicted_end, e["ts"].get<double>() + e["dur"].get<double>());
    CHECK(e["ts"].get<double>() >= 0);
  }
  CHECK(measured == 983);
  CHECK(predicted > 0);
  // The pair as the simulated step ran it, from its first task: within the step's own bounds.
  CHECK(predicted_end > 0.5 * 129012);
  CHECK(predicted_end < 2 * 129012);
}

TEST_CASE("a trace with recorded shapes: its GEMMs fit gemm_model per shape, recovering the model the times were drawn from") {
  // tests/fixtures/traces/gemm-shapes-kineto.json (make-gemm-shapes.py): 27 bf16 GEMM ops (aten::mm,
  // addmm with a split-K reduction kernel, a 4-way bmm) whose kernels take the time a shape model with
  // ceiling 0.70 and K overhead 300 (128x128 tiles, 132 SMs, 989.4 TFLOP/s) gives them; one fp8
  // _scaled_mm (too few to fit) and an aten::add that records dims too (not a GEMM).
  const std::string file = (data_dir() / "tests/fixtures/traces/gemm-shapes-kineto.json").string();
  const GpuTrace raw = read_gpu_trace(file);
  CHECK(raw.gemm_shapes.size() == 28);
  const GemmOpShape& bmm = raw.gemm_shapes.at(127);
  CHECK((bmm.m == 1536 && bmm.n == 1408 && bmm.k == 2048 && bmm.groups == 4 && bmm.dtype == GemmInputType::bf16));
  CHECK(raw.gemm_shapes.at(128).dtype == GemmInputType::fp8);
  KernelClassifier classes = KernelClassifier::bundled();
  const TraceSummary trace = summarize_trace(raw, classes);
  REQUIRE(trace.gemm_samples.size() == 28);
  CHECK(trace.gemm_samples[25].kernels == 2);  // the addmm's GEMM and its split-K reduction
  CHECK(trace.unknown.empty());

  Job job = load_scenario(data_dir() / "scenarios/llama3-405b-16k-h100.json");
  Diagnostics d;
  SourceFile src{"profile", {}, &d, {}};
  const Json profile = load_profile_document(data_dir() / "hw_profiles/gpus/h100-sxm.json", false, src);
  REQUIRE(d.empty());
  const TraceCalibration c = calibrate_from_trace(profile, job, trace, 0);
  REQUIRE(c.shape_fits.size() == 1);
  const TraceShapeFit& f = c.shape_fits[0];
  CHECK(f.dtype == "bf16");
  CHECK(f.gemms == 27);
  CHECK(f.kernels == 28);
  CHECK(f.after.ceiling == doctest::Approx(0.70).epsilon(1e-4));  // the times are written to the nanosecond
  CHECK(f.after.k_overhead == doctest::Approx(300).epsilon(1e-4));
  CHECK(f.rms_after < 1e-4);
  CHECK(f.rms_before > 0.1);  // the bundled H100 model (0.836, 118) prices these kernels well off
  CHECK(c.profile["gemm_model"]["bf16"]["ceiling"] == 0.7);
  CHECK(c.profile["gemm_model"]["bf16"]["k_overhead"] == 300);
  CHECK(c.profile["sources"]["gemm_model"].get<std::string>().find("fitted per shape by plumb calibrate --trace") == 0);
  REQUIRE_FALSE(c.fits.empty());
  CHECK(c.fits[0].per_shape);  // the GEMM class is not scaled on top
  CHECK(c.fits[0].scale == 1.0);
  // Shapes no GEMM has (negative, fractional, past 2^31, inner dimensions that disagree) are left out.
  const fs::path bad = scratch("bad-shapes.json", R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 1, "args": {"External id": 1, "Input Dims": [[-4, 8], [8, 4]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 1, "args": {"External id": 2, "Input Dims": [[4.5, 8], [8, 4]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 1, "args": {"External id": 3, "Input Dims": [[1e300, 8], [8, 4]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 1, "args": {"External id": 4, "Input Dims": [[4, 8], [9, 4]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 1, "args": {"External id": 5, "Input Dims": [[4, 8], [8, 4]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}}]})");
  const GpuTrace bad_trace = read_gpu_trace(bad.string());
  CHECK(bad_trace.gemm_shapes.size() == 1);
  CHECK(bad_trace.gemm_shapes.count(5) == 1);
  fs::remove(bad);
  // The DeepSeek-V3 trace recorded no shapes: nothing to fit per shape there.
  const TraceSummary deepseek = summarize_trace(read_gpu_trace(kTrace), classes);
  CHECK(deepseek.gemm_samples.empty());
}
