// plumb-validate: measurements on the GPU at hand for `plumb calibrate`.
//   plumb-validate bench [--scenario S] [--set k=v ...] [--quick] [--no-sweep] [--reps N] --out F
#include <chrono>
#include <ctime>
#include <fmt/format.h>
#include <fstream>
#include <iostream>

#include "cli/args.hpp"
#include "kernels/device_info.hpp"
#include "kernels/gemm_bench.hpp"
#include "models/catalogue.hpp"
#include "models/diagnostics.hpp"
#include "validate/bench_plan.hpp"

namespace {

using namespace plumb;
using plumb::cli::Args;
using plumb::cli::CommandSpec;
using plumb::cli::UsageError;

const CommandSpec kBench{
    "bench",
    "plumb-validate bench [--scenario S] [--set key=value ...] [--quick] [--no-sweep] [--reps N] --out F",
    "Times the scenario's GEMMs (every stage's layer and head, forward, input and weight gradient, as plumb\n"
    "costs them) and a sweep of square sizes with cuBLASLt in bf16 on GPU 0, and writes the measurement file\n"
    "plumb calibrate fits the GPU profile's GEMM efficiency table from. Refuses a GEMM faster than the\n"
    "profile's dense peak (a timing error, not a result).",
    {},
    {{"--scenario", "S", "the scenario whose GEMM shapes to time (default: the sweep only)"},
     {"--set", "KEY=VALUE", "override a scenario field (repeatable)", true},
     {"--quick", "", "squares up to 4096 and 5 repetitions: a smoke test"},
     {"--no-sweep", "", "only the scenario's shapes"},
     {"--reps", "N", "timed repetitions per GEMM after warm-up (20)"},
     {"--out", "FILE", "where the measurement file goes"}}};

std::string today_utc() {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  return fmt::format("{:04}-{:02}-{:02}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
}

// The bundled profile of the device, by its name, for the peak check.
std::optional<GpuSpec> profile_of(const std::string& device) {
  for (const std::string& name : catalogue_names(kGpuProfiles)) {
    Diagnostics d;
    SourceFile src{"plumb-validate", data_dir(), &d, {}};
    std::optional<GpuSpec> g = read_gpu(Json(name), "", src);
    if (!g) continue;
    std::string model = g->name.substr(g->name.find(' ') + 1);  // "H100 SXM5 80GB" from "NVIDIA H100 SXM5 80GB"
    model = model.substr(0, model.find(' '));
    if (device.find(model) != std::string::npos) return g;
  }
  return std::nullopt;
}

int bench(const Args& args) {
  if (!args.flag("--out")) throw UsageError("--out FILE is required");
  std::vector<kernels::DeviceInfo> devices = kernels::list_devices();
  if (devices.empty()) throw std::runtime_error("no GPU is visible");
  const kernels::DeviceInfo& device = devices.front();
  std::optional<Job> job;
  if (args.flag("--scenario")) job = load_scenario(args.value("--scenario"), args.values("--set"));
  const bool quick = args.flag("--quick");
  std::vector<BenchGemm> gemms = bench_gemms(job ? &*job : nullptr, !args.flag("--no-sweep"));
  if (quick)
    gemms.erase(std::remove_if(gemms.begin(), gemms.end(), [](const BenchGemm& g) { return g.what != "sweep" || g.m > 4096; }),
                gemms.end());
  const int reps = static_cast<int>(args.integer("--reps", quick ? 5 : 20, 1, 10000));
  std::optional<GpuSpec> profile = profile_of(device.name);
  std::vector<std::pair<BenchGemm, double>> timed;
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    const BenchGemm& g = gemms[i];
    kernels::GemmTiming t;
    try {
      t = kernels::time_gemm_bf16(g.m, g.n, g.k, quick ? 2 : 5, reps);
    } catch (const std::runtime_error& e) {
      std::cerr << fmt::format("[{}/{}] {}×{}×{} skipped: {}\n", i + 1, gemms.size(), g.m, g.n, g.k, e.what());
      continue;
    }
    double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
    double tflops = flops / t.median_seconds / 1e12;
    std::cerr << fmt::format("[{}/{}] {}×{}×{} {:.1f} TFLOP/s ({})\n", i + 1, gemms.size(), g.m, g.n, g.k, tflops, g.what);
    if (profile && flops / t.min_seconds > 1.02 * profile->peak_dense.at(MathDtype::bf16))
      throw std::runtime_error(fmt::format("{}×{}×{} ran at {:.0f} TFLOP/s, above the {} bf16 peak: the timing is wrong", g.m, g.n, g.k,
                                           flops / t.min_seconds / 1e12, profile->name));
    timed.emplace_back(g, t.median_seconds);
  }
  Json doc = measurements_json(device.name, device.driver_version, kernels::sm_clock_mhz(), today_utc(), timed);
  std::ofstream out(args.value("--out"));
  if (!out) throw UsageError("cannot write " + args.value("--out"));
  out << doc.dump(1) << "\n";
  std::cout << fmt::format("{} GEMMs timed on {} → {}\n", timed.size(), device.name, args.value("--out"));
  return timed.empty() ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> argv_list(argv + 1, argv + argc);
  if (argv_list.empty() || argv_list[0] != "bench") {
    std::cout << "usage: " << kBench.usage << "\n";
    return argv_list.empty() ? 2 : (argv_list[0] == "--help" ? 0 : 2);
  }
  std::vector<std::string> rest(argv_list.begin() + 1, argv_list.end());
  if (plumb::cli::wants_help(rest)) {
    std::cout << plumb::cli::help_text(kBench);
    return 0;
  }
  try {
    return bench(Args(kBench, rest));
  } catch (const plumb::InputError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const UsageError& e) {
    std::cerr << "plumb-validate bench: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "plumb-validate bench: " << e.what() << "\n";
    return 70;
  }
}
