// Calibration: nccl-tests logs and plumb's measurement files read, α-β and efficiency curves fitted by
// least squares, and the calibrated profiles valid and consistent with plumb's own cost model.
#include <doctest/doctest.h>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "catalogue_fixtures.hpp"
#include "models/input/catalogue.hpp"
#include "models/costs/collective.hpp"
#include "models/costs/flops.hpp"
#include "models/costs/op_cost.hpp"
#include "validate/run/bench_plan.hpp"
#include "cli/report/calibrate_report.hpp"
#include "validate/calibrate/calibrate.hpp"
#include "validate/calibrate/nccl_tests_log.hpp"

using namespace plumb;
using test::gpu;
using test::profile_file;

namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(data_dir() / "tests/fixtures/calibration" / name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Json json_of(const std::string& text) { return Json::parse(text); }

double relative(double a, double b) { return std::abs(a / b - 1); }

// The bundled H100 profile calibrated from `m`, and the profile it writes read back as plumb reads it.
struct H100Calibration {
  Calibration calibration;
  GpuSpec calibrated;
};
H100Calibration calibrate_h100(const Measurements& m) {
  Diagnostics d;
  SourceFile src{"test", data_dir(), &d, {}};
  GpuSpec gpu = *read_gpu(Json("h100-sxm"), "", src);
  H100Calibration out{calibrate_gpu(profile_file("hw_profiles/gpus", "h100-sxm"), gpu, {m}), {}};
  out.calibrated = *read_gpu(out.calibration.profile, "", src);
  REQUIRE(d.empty());
  return out;
}

}  // namespace

TEST_CASE("an nccl-tests log is read row by row, with the collective from its header or its bus factor") {
  // Real rows (kvcache-ai/Mooncake #3484) without rank lines: 8 ranks and all-reduce from busbw/algbw = 1.75.
  NcclTestsLog real = parse_nccl_tests_log(fixture("allreduce-8gpu-excerpt.log"), "excerpt.log");
  CHECK(real.rows.size() == 11);
  CHECK(real.op == CollectiveOp::all_reduce);
  CHECK(real.ranks == 8);
  CHECK(real.nodes == 1);
  CHECK(real.rows.front().bytes == 32768);
  CHECK(relative(real.rows.front().time_s, 18.66e-6) < 1e-12);
  CHECK(relative(real.rows.back().busbw, 300.51e9) < 1e-12);
  CHECK(relative(real.rows.back().in_place_time_s, 195.40e-6) < 1e-12);
  NcclTestsLog synthetic = parse_nccl_tests_log(fixture("reducescatter-2node-synthetic.log"), "rs.log");
  CHECK(synthetic.op == CollectiveOp::reduce_scatter);
  CHECK(synthetic.op_source == "the log's header");
  CHECK(synthetic.ranks == 2);
  CHECK(synthetic.nodes == 2);
  CHECK(synthetic.device == "NVIDIA H100 80GB HBM3");
  CHECK(synthetic.rows.size() == 7);
}

TEST_CASE("plumb-validate collectives writes logs that read back as the nccl-tests logs they imitate") {
  // 8 GPUs of one node; an all-gather and an all-reduce at three sizes.
  std::vector<std::string> devices(8, "NVIDIA H100 80GB HBM3");
  std::vector<NcclTestsRow> rows;
  for (double bytes : {1048576.0, 67108864.0, 1073741824.0}) rows.push_back({bytes, bytes / 350e9 + 20e-6, 0, 0, bytes / 340e9 + 20e-6});
  for (CollectiveOp op : {CollectiveOp::all_gather, CollectiveOp::all_reduce, CollectiveOp::all_to_all}) {
    std::string text = nccl_tests_log_text(op, "node7", devices, rows);
    NcclTestsLog log = parse_nccl_tests_log(text, "written.log");
    CHECK(log.op == op);
    CHECK(log.op_source == "the log's header");
    CHECK(log.ranks == 8);
    CHECK(log.nodes == 1);
    CHECK(log.device == "NVIDIA H100 80GB HBM3");
    REQUIRE(log.rows.size() == rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      CHECK(log.rows[i].bytes == rows[i].bytes);
      CHECK(relative(log.rows[i].time_s, rows[i].time_s) < 1e-3);  // printed in µs to two decimals
      CHECK(relative(log.rows[i].busbw, log.rows[i].algbw * nccl_tests_bus_factor(op, 8)) < 1e-2);
    }
  }
  CHECK(nccl_tests_bus_factor(CollectiveOp::all_reduce, 8) == doctest::Approx(1.75));
  CHECK(nccl_tests_bus_factor(CollectiveOp::reduce_scatter, 8) == doctest::Approx(0.875));
}

TEST_CASE("a log that is not nccl-tests output is refused with the file and line") {
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log("hello\nworld\n", "x.log"), doctest::Contains("x.log: line 2: no result rows found"), InputError);
  CHECK_THROWS_WITH_AS(parse_nccl_tests_log("# header\n 1024 256 float sum -1 12.0 0.1 0.1\n", "y.log"),
                       doctest::Contains("y.log: line 2: a result row has 8 columns"), InputError);
}

TEST_CASE("least squares recover the α and β that made the data") {
  NcclTestsLog log = parse_nccl_tests_log(fixture("reducescatter-2node-synthetic.log"), "rs.log");
  std::vector<double> x, t;
  for (const NcclTestsRow& r : log.rows) {
    x.push_back(r.bytes * bus_factor(log.op, log.ranks));
    t.push_back(r.time_s);
  }
  AlphaBeta f = fit_alpha_beta(x, t);
  CHECK(relative(f.alpha, 25e-6) < 2e-3);  // times are printed to 0.01 us
  CHECK(relative(1 / f.beta, 45e9) < 1e-4);
  CHECK(f.rms_relative_error < 1e-3);
}

// The bundled H100 NDR fabric profile, as read and as JSON, to calibrate.
struct NdrProfile {
  Json raw = profile_file("hw_profiles/fabrics", "dgx-h100-ndr");
  Diagnostics d;
  SourceFile src{"test", data_dir(), &d, {}};
  GpuSpec gpu = *read_gpu(Json("h100-sxm"), "", src);
  FabricSpec fabric = *read_fabric(Json("dgx-h100-ndr"), "", src);
  Calibration calibrate(const std::vector<NcclTestsLog>& logs) const { return calibrate_fabric(raw, gpu, fabric, logs); }
};

// Both fixture logs, the multi-node one given first (single-node logs are fitted first all the same).
std::vector<NcclTestsLog> both_fixture_logs() {
  return {parse_nccl_tests_log(fixture("reducescatter-2node-synthetic.log"), "rs.log"),
          parse_nccl_tests_log(fixture("allreduce-8gpu-excerpt.log"), "excerpt.log")};
}

TEST_CASE("a fabric calibrated from nccl-tests makes plumb's collective model reach the measured bus bandwidth") {
  NdrProfile p;
  const GpuSpec& gpu = p.gpu;
  std::vector<NcclTestsLog> logs = both_fixture_logs();
  Calibration c = p.calibrate(logs);
  REQUIRE(c.collectives.size() == 2);  // single-node logs first
  CHECK(c.collectives[1].field == "nic_effective");
  CHECK(c.collectives[1].reachable);
  // The excerpt's all-reduce is slower than even the ring: NVLS is dropped and NVLink fitted.
  CHECK(c.collectives[0].field == "nvlink_effective_per_gpu");
  CHECK(!c.profile.contains("nvls_allreduce_algbw"));
  // The written profile is a valid profile, and with it plumb's model gives the fitted bus bandwidth.
  FabricSpec calibrated = *read_fabric(c.profile, "", p.src);
  REQUIRE(p.d.empty());
  CHECK(calibrated.sources.at("nic_effective").find("fitted by plumb calibrate") != std::string::npos);
  CollectiveLinks links = CollectiveLinks::of(gpu, calibrated);
  for (const CollectiveFit& f : c.collectives) {
    GroupPlacement group{f.log->ranks, f.log->nodes};
    double big = 8.0 * 1073741824.0;
    CHECK(relative(collective_cost(f.log->op, big, group, links).busbw, 1 / f.fit.beta) < 0.01);
  }
  CHECK(c.collectives[1].prediction_rms < 0.10);
}

TEST_CASE("nccl-tests logs with latency-bound rows also fit the latency: a scale on NCCL's tables, by least squares") {
  NdrProfile p;
  std::vector<NcclTestsLog> logs = both_fixture_logs();
  Calibration c = p.calibrate(logs);  // the single-node log first, so the network fit sees NVLink calibrated
  REQUIRE(c.collectives.size() == 2);
  const CollectiveFit& nvlink = c.collectives[0];
  const CollectiveFit& network = c.collectives[1];
  CHECK(nvlink.log->nodes == 1);
  CHECK(nvlink.latency_field == "nvlink_latency_scale");
  CHECK(network.latency_field == "network_latency_scale");
  // The synthetic log was made with α = 25 us over 2 nodes; NCCL's table gives a 2-rank ring 8.4 + 14 us
  // (Simple), so the network hops must be slower than the table's; the fit improves every log.
  CHECK(network.latency_scale > 1.2);
  CHECK(network.latency_scale < 3.0);
  CHECK(network.prediction_rms < network.rms_before_latency);
  CHECK(network.prediction_rms < 0.04);
  CHECK(nvlink.prediction_rms < nvlink.rms_before_latency);
  // Written with their sources and read back: plumb's model now gives the calibrated times.
  FabricSpec calibrated = *read_fabric(c.profile, "", p.src);
  REQUIRE(p.d.empty());
  REQUIRE(calibrated.network_latency_scale);
  CHECK(*calibrated.network_latency_scale == doctest::Approx(network.latency_scale).epsilon(1e-3));
  CHECK(calibrated.sources.at("network_latency_scale").find("fitted by plumb calibrate from rs.log") != std::string::npos);
  CHECK(calibration_json(c)["profile"]["nvlink_latency_scale"].get<double>() == doctest::Approx(nvlink.latency_scale).epsilon(1e-3));
  CHECK(calibration_report(c).find("latency: network_latency_scale = ") != std::string::npos);
}

TEST_CASE("a log of large messages only leaves the latency alone") {
  NdrProfile p;
  std::string text = fixture("reducescatter-2node-synthetic.log");
  std::string large;  // the header and the rows from 256 MiB up
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    std::string line = text.substr(at, end == std::string::npos ? std::string::npos : end - at + 1);
    at = end == std::string::npos ? text.size() : end + 1;
    std::size_t first = line.find_first_not_of(' ');
    if (line.empty() || line[0] == '#' || first == std::string::npos || std::stod(line.substr(first)) >= 268435456.0) large += line;
  }
  std::vector<NcclTestsLog> logs{parse_nccl_tests_log(large, "large.log")};
  REQUIRE(logs[0].rows.size() == 3);
  Calibration c = p.calibrate(logs);
  CHECK(c.collectives[0].latency_field.empty());
  CHECK_FALSE(c.profile.contains("network_latency_scale"));
  CHECK(calibration_report(c).find("latency: not fitted") != std::string::npos);
}

TEST_CASE("a GPU calibrated from GEMM measurements carries the fitted efficiency curve as its table") {
  Measurements m = read_measurements(json_of(fixture("gemm-synthetic.json")), "gemm.json");
  CHECK(m.gemm.size() == 8);
  auto [c, calibrated] = calibrate_h100(m);
  REQUIRE(c.gemm.size() == 1);
  CHECK(relative(c.gemm[0].curve.e_max, 0.78) < 1e-6);
  CHECK(relative(c.gemm[0].curve.f_half, 2e10) < 1e-5);
  CHECK(calibrated.gemm_efficiency_at(1e12) == doctest::Approx(0.765).epsilon(1e-3));
  CHECK(calibrated.gemm_efficiency_at(5e8) < calibrated.gemm_efficiency_at(5e11));  // small GEMMs reach less
  CHECK(calibrated.sources.at("gemm_efficiency").find("8 points") != std::string::npos);
}

TEST_CASE("fp8 GEMMs calibrate the fp8 table and streaming copies the HBM efficiency, through bench's own file") {
  // Written by measurements_json as plumb-validate bench writes it: the same shapes in bf16 and fp8,
  // times from closed-form curves (bf16 e = 0.78·F/(F + 2e10) of 989.4 TFLOP/s; fp8 0.60·F/(F + 4e10)
  // of 1978.9), and three copies at 2.95, 3.00 and 3.05 TB/s against the H100's 3.35.
  std::vector<std::pair<BenchGemm, double>> timed;
  for (std::int64_t s = 512; s <= 16384; s *= 2)
    for (MathDtype dtype : {MathDtype::bf16, MathDtype::fp8}) {
      BenchGemm g{s, s, s, "sweep", dtype};
      double f = 2.0 * static_cast<double>(s) * static_cast<double>(s) * static_cast<double>(s);
      double e = dtype == MathDtype::bf16 ? 0.78 * f / (f + 2e10) : 0.60 * f / (f + 4e10);
      double peak = dtype == MathDtype::bf16 ? 989.4e12 : 1978.9e12;
      timed.emplace_back(g, f / (e * peak));
    }
  std::vector<MemoryMeasurement> copies{{"copy", 2e9, 2e9 / 2.95e12}, {"copy", 2e9, 2e9 / 3.00e12}, {"copy", 2e9, 2e9 / 3.05e12}};
  Measurements m = read_measurements(measurements_json("NVIDIA H100 80GB HBM3", "13.0", 1980, "2026-11-21", timed, copies), "b.json");
  REQUIRE(m.memory.size() == 3);
  auto [c, calibrated] = calibrate_h100(m);
  REQUIRE(c.gemm.size() == 2);
  CHECK(c.gemm[1].field == "gemm_efficiency_fp8");
  CHECK(relative(c.gemm[0].curve.e_max, 0.78) < 1e-6);
  CHECK(relative(c.gemm[1].curve.e_max, 0.60) < 1e-6);
  CHECK(relative(c.gemm[1].curve.f_half, 4e10) < 1e-5);
  REQUIRE(c.shares.size() == 1);
  const ShareFit& memory = c.shares.front();
  CHECK(memory.field == "hbm_efficiency");
  CHECK(memory.efficiency == doctest::Approx(3.00 / 3.35));  // the median run
  CHECK(memory.lowest == doctest::Approx(2.95 / 3.35));
  CHECK(calibrated.hbm_efficiency == doctest::Approx(0.896).epsilon(1e-3));
  // Each table answers for its own dtype against its own peak.
  CHECK(calibrated.gemm_efficiency_at(1e13, MathDtype::fp8) == doctest::Approx(0.60 * 1e13 / (1e13 + 4e10)).epsilon(0.01));
  CHECK(calibrated.gemm_efficiency_at(1e13, MathDtype::bf16) == doctest::Approx(0.78 * 1e13 / (1e13 + 2e10)).epsilon(0.01));
  CHECK(calibrated.sources.at("gemm_efficiency_fp8").find("fp8 GEMMs") != std::string::npos);
  CHECK(calibrated.sources.at("hbm_efficiency").find("median of 3") != std::string::npos);
  CHECK(calibration_report(c).find("hbm_efficiency: 0.896 of the datasheet HBM bandwidth") != std::string::npos);
  // 2.95, 3.00 and 3.05 against the median 3.00: RMS of ±1/60.
  CHECK(memory.rms_relative_error == doctest::Approx(std::sqrt(2.0 / 3.0) / 60));
}

TEST_CASE("the scenario's own memory-bound kernels, where timed, set hbm_efficiency so their step total is their measured total") {
  // The host bench times the kernels its run executes (norms, SwiGLU: compute-bound on a CPU core) beside
  // copies; the copies' median would price those kernels 10-30x fast. With them, the share is their bytes
  // over their time, each weighed by its runs a step, and the copies do not count.
  const std::vector<std::pair<BenchGemm, double>> gemms{{BenchGemm{4096, 4096, 4096, "a"}, 2 * 4096.0 * 4096 * 4096 / (0.7 * 989.4e12)},
                                                        {BenchGemm{8192, 8192, 8192, "b"}, 2 * 8192.0 * 8192 * 8192 / (0.75 * 989.4e12)}};
  std::vector<MemoryMeasurement> rows{{"copy", 2e9, 2e9 / 3.0e12},
                                      {"copy", 2e9, 2e9 / 3.0e12},
                                      {"stage 0 · SwiGLU (forward)", 1e9, 4e-3, 1},
                                      {"stage 0 · attention norm (forward)", 1e9, 1e-3, 3}};
  Measurements m = read_measurements(measurements_json("NVIDIA H100 80GB HBM3", "13.0", 1980, "2026-11-26", gemms, rows), "k.json");
  REQUIRE(m.memory.size() == 4);
  CHECK(m.memory[3].runs == 3);  // written and read back
  auto [c, calibrated] = calibrate_h100(m);
  // (1e9 + 3 × 1e9) bytes over (4 + 3 × 1) ms against 3.35 TB/s.
  const double pooled = 4e9 / 7e-3 / 3.35e12;
  CHECK(calibrated.hbm_efficiency == doctest::Approx(pooled).epsilon(2e-3));
  CHECK(calibrated.hbm_seconds(4e9) == doctest::Approx(7e-3).epsilon(2e-3));  // the kernels' step total, as measured
  CHECK(calibrated.sources.at("hbm_efficiency").find("total over 2 of the scenario's memory-bound kernels") != std::string::npos);
}

TEST_CASE("the launch overhead bench measures becomes the profile's kernel_overhead, and the GEMM fit is of the work") {
  // GEMM times of a flat 0.8 of the bf16 peak plus a 4 µs launch each, and the bench's empty
  // kernels at 4 µs: the fitted curve is the flat 0.8, the 4 µs goes to kernel_overhead.
  std::vector<std::pair<BenchGemm, double>> timed;
  for (std::int64_t s = 1024; s <= 16384; s *= 2) {
    double f = 2.0 * static_cast<double>(s) * static_cast<double>(s) * static_cast<double>(s);
    timed.emplace_back(BenchGemm{s, s, s, "sweep"}, f / (0.8 * 989.4e12) + 4e-6);
  }
  Measurements m = read_measurements(measurements_json("NVIDIA H100 80GB HBM3", "13.0", 1980, "2026-11-21", timed, {}, LaunchMeasurement{2000, 4e-6}),
                                     "launch.json");
  REQUIRE(m.kernel_overhead);
  auto [c, calibrated] = calibrate_h100(m);
  REQUIRE(c.gemm.size() == 1);
  CHECK(relative(c.gemm[0].curve.e_max, 0.8) < 1e-3);
  CHECK(c.gemm[0].curve.at(2.0 * 1024 * 1024 * 1024) > 0.79);  // small GEMMs were slow only by the launch
  CHECK(calibrated.kernel_overhead == doctest::Approx(4e-6).epsilon(1e-3));
  CHECK(calibrated.sources.at("kernel_overhead").find("empty kernels") != std::string::npos);
  CHECK(calibration_report(c).find("kernel overhead: 4.00 us") != std::string::npos);
}

TEST_CASE("a measurement file without its device and date is refused") {
  CHECK_THROWS_WITH_AS(read_measurements(Json::parse(R"({"plumb_measurements": 1, "gemm": []})"), "m.json"),
                       doctest::Contains("m.json: missing key \"device\""), InputError);
}

TEST_CASE("plumb-validate bench times exactly the GEMMs plumb costs, and its file is what calibrate reads") {
  Job job = load_scenario(data_dir() / "scenarios/deepseek-v3-2048xh800.json");
  std::vector<BenchGemm> gemms = bench_gemms(&job, true);
  auto has = [&](std::int64_t m, std::int64_t n, std::int64_t k) {
    return std::any_of(gemms.begin(), gemms.end(), [&](const BenchGemm& g) { return g.m == m && g.n == n && g.k == k; });
  };
  // The routed experts' gate+up projection on one EP rank: 4096 tokens × top-8 rows over its 4
  // experts, 8192 each, 7168 → 2·2048.
  CHECK(has(8192, 4096, 7168));  // forward
  CHECK(has(8192, 7168, 4096));  // input gradient
  CHECK(has(7168, 4096, 8192));  // weight gradient
  CHECK(has(256, 256, 256));
  CHECK(has(16384, 16384, 16384));
  for (std::size_t i = 1; i < gemms.size(); ++i)  // no shape twice, smallest first
    CHECK(static_cast<double>(gemms[i - 1].m) * static_cast<double>(gemms[i - 1].n) * static_cast<double>(gemms[i - 1].k) <=
          static_cast<double>(gemms[i].m) * static_cast<double>(gemms[i].n) * static_cast<double>(gemms[i].k));
  std::vector<std::pair<BenchGemm, double>> timed{{gemms[0], 1e-5}, {gemms[1], 2e-5}};
  Measurements m = read_measurements(measurements_json("NVIDIA H100 80GB HBM3", "13.0", 1980, "2026-11-21", timed), "bench.json");
  CHECK(m.gemm.size() == 2);
  CHECK(m.device == "NVIDIA H100 80GB HBM3");
  CHECK(m.gemm[1].seconds == 2e-5);
}

TEST_CASE("plumb-validate bench times flash attention at the scenario's heads and a sweep, and calibrate fits the attention efficiencies") {
  // GPT-3 175B at TP8: 96/8 heads of width 128 over 2048 tokens; DeepSeek-V3's MLA (192, 128).
  Job gpt3 = load_scenario(data_dir() / "scenarios/gpt3-175b-megatron.json");
  std::vector<BenchAttention> calls = bench_attention(&gpt3, true);
  REQUIRE(calls.size() == 6);  // the scenario's, and 1K…16K tokens
  CHECK(calls[0].what == "the scenario's");
  CHECK(calls[0].call.batch_heads == 12 * gpt3.layout.micro_batch);
  CHECK(calls[0].call.seq == 2048);
  for (const BenchAttention& b : calls) {
    CHECK(b.call.supported());
    CHECK(b.call.causal);
    CHECK(b.call.d_qk == 128);
  }
  CHECK(calls[5].call.seq == 16384);
  CHECK(calls[5].call.batch_heads * calls[5].call.seq == std::int64_t{1} << 18);
  Job deepseek = load_scenario(data_dir() / "scenarios/deepseek-v3-2048xh800.json");
  CHECK(bench_attention(&deepseek, false).front().call.d_qk == 192);
  CHECK(bench_attention(&deepseek, false).size() == 1);
  // Times made from known shares of the H100's bf16 peak (0.40 forward, 0.30 backward at the longest
  // run's 16384 keys, lower in shorter sequences along s / (s + 500); each pass's FLOPs as plumb counts
  // them) plus a 4 µs launch: calibrate recovers the curve and the shares, and plumb's op time with the
  // calibrated profile is the measured time.
  const double peak = 989.4e12, launch = 4e-6, half = 500, reference = 16384;
  auto along = [&](double s) { return (s / (s + half)) / (reference / (reference + half)); };
  std::vector<AttentionMeasurement> runs;
  for (const BenchAttention& b : calls) {
    const kernels::AttentionCall& c = b.call;
    AttentionMeasurement a{static_cast<double>(c.batch_heads), static_cast<double>(c.seq), static_cast<double>(c.d_qk),
                           static_cast<double>(c.d_v), true, 0, 0, b.what};
    const FlashAttentionFlops f = flash_attention_flops(a.batch_heads * a.seq, a.seq, a.d_qk, a.d_v, true);
    a.forward_seconds = f.forward / (0.40 * along(a.seq) * peak) + launch;
    a.backward_seconds = f.backward_executed() / (0.30 * along(a.seq) * peak) + launch;
    runs.push_back(a);
  }
  runs[2].backward_seconds *= 1.1;  // one slower run moves the range, not the median
  Measurements m = read_measurements(
      measurements_json("NVIDIA H100 80GB HBM3", "13.0", 1980, "2026-11-21", {}, {}, LaunchMeasurement{2000, launch}, runs), "attention.json");
  REQUIRE(m.attention.size() == 6);
  CHECK(m.attention[0].what == "the scenario's");
  auto [c, calibrated] = calibrate_h100(m);
  REQUIRE(calibrated.attention_efficiency);
  REQUIRE(calibrated.attention_backward_efficiency);
  CHECK(calibrated.attention_half_sequence == doctest::Approx(half).epsilon(0.002));
  CHECK(calibrated.attention_reference_sequence == reference);
  CHECK(*calibrated.attention_efficiency == doctest::Approx(0.40));
  CHECK(*calibrated.attention_backward_efficiency == doctest::Approx(0.30));
  CHECK(calibrated.sources.at("attention_efficiency").find("median of 6 flash attention forward runs") != std::string::npos);
  CHECK(calibration_report(c).find("attention_backward_efficiency: 0.300 of the bf16 dense peak") != std::string::npos);
  // Five backward runs on the curve, one 10% slower (its share 1/1.1 of the median, beyond the launch):
  // RMS of (1/1.1 − 1) over six.
  REQUIRE(c.shares.size() == 2);
  CHECK(c.shares[1].field == "attention_backward_efficiency");
  CHECK(c.shares[1].rms_relative_error == doctest::Approx(std::abs(c.shares[1].lowest / 0.30 - 1) / std::sqrt(6.0)).epsilon(0.01));
  CHECK(c.shares[1].lowest < 0.30 / 1.09);
  CHECK(c.shares[0].rms_relative_error == doctest::Approx(0).epsilon(1e-3));
  // plumb's core-attention op for GPT-3's micro-batch, priced by the calibrated profile: the measured times.
  Job job = gpt3;
  job.cluster.gpu = calibrated;
  job.training.attention_kernel = AttentionKernel::flash;  // the SC'21 scenario's Megatron-LM ran it unfused
  for (const LayerOp& op : layer_ops(job.model, 0, op_context(job.layout, job.training, job.cluster.gpu)))
    if (op.cls == OpClass::attention) {
      CHECK(op_time(op, 0, job.cluster.gpu, job.training).seconds == doctest::Approx(runs[0].forward_seconds).epsilon(1e-3));
      CHECK(op_time(op, 1, job.cluster.gpu, job.training).seconds == doctest::Approx(runs[0].backward_seconds).epsilon(1e-3));
    }
  // A row without its timings is refused with its path.
  Json bad = measurements_json("NVIDIA H100 80GB HBM3", "13.0", 1980, "2026-11-21", {}, {}, std::nullopt, runs);
  bad["attention"][3].erase("backward_seconds");
  CHECK_THROWS_WITH_AS(read_measurements(bad, "bad.json"), doctest::Contains("/attention/3: missing key \"backward_seconds\""), InputError);
}

TEST_CASE("GEMMs of several K calibrate the shape model: a known model is recovered, and the calibrated profile uses it") {
  // Times from a closed-form shape model (ceiling 0.7, 300 K steps a 128×128 tile) over shapes of
  // several K, wave counts and a split-K one: the fit returns that model and the profile prices by it.
  GemmShapeModel truth;
  truth.ceiling = 0.7;
  truth.k_overhead = 300;
  const std::int64_t shapes[][3] = {{4096, 4096, 512}, {4096, 4096, 2048}, {8192, 7168, 7168}, {2048, 1024, 4096},
                                    {4096, 2112, 7168}, {16384, 16384, 1024}, {512, 512, 8192}};
  std::vector<std::pair<BenchGemm, double>> timed;
  for (const auto& s : shapes) {
    const double m = static_cast<double>(s[0]), n = static_cast<double>(s[1]), k = static_cast<double>(s[2]);
    timed.emplace_back(BenchGemm{s[0], s[1], s[2], "shape"}, 2 * m * n * k / (truth.efficiency(m, n, k, 1, 132) * 989.4e12));
  }
  Measurements m = read_measurements(measurements_json("NVIDIA H100 80GB HBM3", "13.0", 1980, "2026-11-21", timed), "shape.json");
  auto [c, calibrated] = calibrate_h100(m);
  REQUIRE(c.gemm.size() == 1);
  REQUIRE(c.gemm[0].shape);
  CHECK(relative(c.gemm[0].shape->model.ceiling, 0.7) < 1e-9);
  CHECK(relative(c.gemm[0].shape->model.k_overhead, 300) < 1e-6);
  CHECK(c.gemm[0].shape->rms_relative_error < 1e-9);
  const GemmShapeModel& fitted = calibrated.gemm_model.at(MathDtype::bf16);
  CHECK(fitted.ceiling == doctest::Approx(0.7));
  CHECK(fitted.k_overhead == doctest::Approx(300));
  // The bundled fp8 model was not refitted: it stays, its earlier source kept beside the new one.
  CHECK(calibrated.gemm_model.count(MathDtype::fp8) == 1);
  CHECK(calibrated.sources.at("gemm_model").find("bf16: fitted by plumb calibrate") == 0);
  CHECK(calibrated.sources.at("gemm_model").find("earlier:") != std::string::npos);
  CHECK(calibration_report(c).find("ceiling 0.700, k_overhead 300 (elements of K) on 128x128 tiles") != std::string::npos);
}

TEST_CASE("weight-gradient and grouped GEMM rows calibrate their own kernels' models, and plumb prices each GEMM by its kernel's") {
  // Four known models, one per kernel: dense (0.7, 300), weight gradient (0.55, 500), grouped experts
  // (0.35, 200) and their weight gradient (0.25, 400), each timed over shapes of several K.
  auto model = [](double ceiling, double k_overhead) {
    GemmShapeModel g;
    g.ceiling = ceiling;
    g.k_overhead = k_overhead;
    return g;
  };
  struct Kernel {
    GemmShapeModel truth;
    double groups;
    const char* pass;
  };
  const Kernel kernels[] = {{model(0.7, 300), 1, "forward"},
                            {model(0.55, 500), 1, "weight_gradient"},
                            {model(0.35, 200), 160, "forward"},
                            {model(0.25, 400), 160, "weight_gradient"}};
  const double shapes[][3] = {{4096, 4096, 512}, {4096, 4096, 2048}, {8192, 7168, 7168}, {154, 3072, 5120}, {5120, 3072, 154}, {512, 512, 8192}};
  Json doc = {{"plumb_measurements", 1}, {"device", "SYNTHETIC"}, {"date", "2026-11-25"}, {"gemm", Json::array()}};
  for (const Kernel& k : kernels)
    for (const auto& s : shapes) {
      const double seconds = 2 * s[0] * s[1] * s[2] * k.groups / (k.truth.efficiency(s[0], s[1], s[2], k.groups, 132) * 989.4e12);
      Json row = {{"m", s[0]}, {"n", s[1]}, {"k", s[2]}, {"dtype", "bf16"}, {"seconds", seconds}, {"pass", k.pass}};
      if (k.groups > 1) row["groups"] = k.groups;
      doc["gemm"].push_back(row);
    }
  auto [c, calibrated] = calibrate_h100(read_measurements(doc, "kernels.json"));
  REQUIRE(c.gemm.size() == 1);
  REQUIRE(c.gemm[0].shape);
  CHECK(c.gemm[0].shape->model.ceiling == doctest::Approx(0.7));
  CHECK(c.gemm[0].points == 12);  // the table: the dense rows only
  REQUIRE(c.gemm[0].kernels.size() == 3);
  const GemmShapeModel* wgrad = calibrated.gemm_model_for(MathDtype::bf16, 1, true);
  const GemmShapeModel* grouped = calibrated.gemm_model_for(MathDtype::bf16, 160, false);
  const GemmShapeModel* grouped_wgrad = calibrated.gemm_model_for(MathDtype::bf16, 160, true);
  REQUIRE((wgrad && grouped && grouped_wgrad));
  CHECK(wgrad->ceiling == doctest::Approx(0.55));
  CHECK(wgrad->k_overhead == doctest::Approx(500));
  CHECK(grouped->ceiling == doctest::Approx(0.35));
  CHECK(grouped->k_overhead == doctest::Approx(200));
  CHECK(grouped_wgrad->ceiling == doctest::Approx(0.25));
  CHECK(grouped_wgrad->k_overhead == doctest::Approx(400));
  // Priced by kernel: a grouped forward GEMM at the grouped model's efficiency, not the dense one's.
  CHECK(calibrated.gemm_efficiency_of(154, 3072, 5120, 160, MathDtype::bf16) ==
        doctest::Approx(kernels[2].truth.efficiency(154, 3072, 5120, 160, 132)));
  CHECK(calibrated.gemm_efficiency_of(154, 3072, 5120, 1, MathDtype::bf16) ==
        doctest::Approx(kernels[0].truth.efficiency(154, 3072, 5120, 1, 132)));
  CHECK(calibration_report(c).find("grouped.weight_gradient GEMMs (gemm_model.bf16.grouped.weight_gradient): ceiling 0.250") != std::string::npos);
  // A pass that is not one of the three is refused with its path.
  doc["gemm"][0]["pass"] = "backward";
  CHECK_THROWS_WITH_AS(read_measurements(doc, "kernels.json"), doctest::Contains("/gemm/0/pass"), InputError);
}

TEST_CASE("GEMMs of one K cannot separate ceiling from overhead: the bundled shape model goes, so the fitted table decides") {
  std::vector<std::pair<BenchGemm, double>> timed;
  for (std::int64_t s : {2048, 4096, 8192, 16384}) {  // at least 132 tiles each: no split-K
    const double f = 2.0 * static_cast<double>(s) * static_cast<double>(s) * 4096;
    timed.emplace_back(BenchGemm{s, s, 4096, "one K", MathDtype::fp8}, f / (0.5 * 1978.9e12));
  }
  Measurements m = read_measurements(measurements_json("NVIDIA H100 80GB HBM3", "13.0", 1980, "2026-11-21", timed), "onek.json");
  auto [c, calibrated] = calibrate_h100(m);
  REQUIRE(c.gemm.size() == 1);
  CHECK_FALSE(c.gemm[0].shape);
  CHECK(calibrated.gemm_model.count(MathDtype::fp8) == 0);
  CHECK(calibrated.gemm_model.count(MathDtype::bf16) == 1);
  CHECK(calibrated.gemm_efficiency_of(4096, 4096, 4096, 1, MathDtype::fp8) == doctest::Approx(0.5).epsilon(0.01));
}

TEST_CASE("XLA's measured GEMM table refits each bundled shape model's K overhead, the same fit calibrate makes") {
  // tests/fixtures/calibration/xla-matmul-perf-table.json: OpenXLA's default cuBLAS GEMM table for the
  // H100 and the B200, less each set's fixed per-call time (as calibrate subtracts kernel_overhead).
  // The H100 model's K overhead came from another XLA table (matmul_interpolator_data.h): this one is
  // an independent check. The B200's came from this one. The ceilings are anchored to MAMF instead.
  const Json doc = json_of(fixture("xla-matmul-perf-table.json"));
  REQUIRE(doc.at("sets").size() == 3);
  for (const Json& set : doc.at("sets")) {
    const GpuSpec g = gpu(set.at("profile").get<std::string>());
    const MathDtype dtype = set.at("dtype").get<std::string>() == "fp8" ? MathDtype::fp8 : MathDtype::bf16;
    const GemmShapeModel& bundled = g.gemm_model.at(dtype);
    const double per_call = set.at("per_call_us").get<double>() * 1e-6, peak = g.peak_dense.at(dtype);
    std::vector<GemmShapePoint> points;
    for (const Json& r : set.at("rows_b_m_n_k_tflops")) {
      const double b = r[0], m = r[1], n = r[2], k = r[3], flops = 2 * b * m * n * k;
      const double seconds = flops / (r[4].get<double>() * 1e12);
      points.push_back({m, n, k, b, flops / ((seconds - per_call) * peak)});
    }
    const bool h100 = set.at("profile") == "h100-sxm";
    INFO(set.at("profile").get<std::string>() << " " << set.at("dtype").get<std::string>());
    CHECK(points.size() == 160);
    GemmShapeFit f = fit_gemm_shape(points, bundled.tile_m, bundled.tile_n, g.sms);
    // H100: 128 here against the bundled 118 (+8%); B200: the bundled figures are this table's.
    CHECK(relative(f.model.k_overhead, bundled.k_overhead) < (h100 ? 0.10 : 0.03));
    CHECK(f.rms_relative_error < 0.10);
  }
}

TEST_CASE("the shape models meet ml-engineering's MAMF measurements: B200 at its anchors, H100 at a newer best shape") {
  // stas00/ml-engineering, compute/accelerator/README.md, MAMF table (TFLOP/s at the best shape found).
  const GpuSpec b200 = gpu("b200"), h100 = gpu("h100-sxm");
  CHECK(b200.gemm_efficiency_of(1792, 16128, 3072, 1, MathDtype::bf16) * 2250e12 == doctest::Approx(1745.0e12).epsilon(0.005));
  CHECK(b200.gemm_efficiency_of(15360, 4096, 3072, 1, MathDtype::fp8) * 4500e12 == doctest::Approx(3432.5e12).epsilon(0.005));
  // The H100's ceiling was anchored at 6144×17920×2816 (792.1); the table's later row, 794.5 at
  // 2048×2048×13312 (torch 2.7.0+cu126), is a shape the model never saw.
  CHECK(h100.gemm_efficiency_of(2048, 2048, 13312, 1, MathDtype::bf16) * 989.4e12 == doctest::Approx(794.5e12).epsilon(0.01));
}
