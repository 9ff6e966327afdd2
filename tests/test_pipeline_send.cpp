// A cluster's measured pipeline exchange (fabric pipeline_send): the Zero Bubble paper's own benchmark
// of one blocking hop, refitted here, and the floor it puts under a pipeline stage's send.
#include <doctest/doctest.h>

#include "catalogue_fixtures.hpp"
#include "models/costs/step_costs.hpp"
#include "models/scenario/job.hpp"

using namespace plumb;

TEST_CASE("the Zero Bubble cluster's pipeline exchange is the least-squares line through the paper's Table 9") {
  // Qi et al. Table 9: T_comm (ms) of each setup's send, micro-batch × 1024 tokens × hidden × 2 bytes.
  struct Row {
    double bytes, ms;
  };
  const Row rows[] = {{6.0 * 1024 * 2304 * 2, 0.601}, {6.0 * 1024 * 2304 * 2, 0.626}, {6.0 * 1024 * 2304 * 2, 0.762},
                      {3.0 * 1024 * 4096 * 2, 0.527}, {3.0 * 1024 * 4096 * 2, 0.577}, {3.0 * 1024 * 4096 * 2, 0.535},
                      {1.0 * 1024 * 5120 * 2, 0.377}, {1.0 * 1024 * 5120 * 2, 0.379}, {1.0 * 1024 * 5120 * 2, 0.378},
                      {1.0 * 1024 * 6144 * 2, 0.408}, {1.0 * 1024 * 6144 * 2, 0.408}, {1.0 * 1024 * 6144 * 2, 0.460}};
  double mx = 0, my = 0;
  for (const Row& r : rows) {
    mx += r.bytes / 12;
    my += r.ms * 1e-3 / 12;
  }
  double sxy = 0, sxx = 0;
  for (const Row& r : rows) {
    sxy += (r.bytes - mx) * (r.ms * 1e-3 - my);
    sxx += (r.bytes - mx) * (r.bytes - mx);
  }
  const double per_byte = sxy / sxx, latency = my - per_byte * mx;
  const FabricSpec f = test::fabric("zero-bubble-a100-roce");
  REQUIRE(f.pipeline_send);
  CHECK(f.pipeline_send->latency == doctest::Approx(latency).epsilon(0.005));
  CHECK(f.pipeline_send->bandwidth == doctest::Approx(1 / per_byte).epsilon(0.005));
  // The rest is Selene's.
  const FabricSpec selene = test::fabric("selene-a100-hdr");
  CHECK(f.nvlink_effective_per_gpu == selene.nvlink_effective_per_gpu);
  CHECK(f.nic_effective == selene.nic_effective);
  CHECK_FALSE(selene.pipeline_send);
}

TEST_CASE("a measured pipeline exchange is the floor of a stage's send; a hop across nodes keeps the network's time") {
  // GPT 1.5B, 8 stages in one node: a 6 × 1024 × 2304 fp16 activation, 28.3 MB.
  Job job = load_scenario(data_dir() / "scenarios/published/zero-bubble-a100-1.5b-1f1b-m24.json");
  const double bytes = 6.0 * 1024 * 2304 * 2;
  const double measured = step_costs(job).stages[0].p2p;
  CHECK(measured == doctest::Approx(237e-6 + bytes / 71.8e9));
  job.cluster.fabric.pipeline_send.reset();
  const double links = step_costs(job).stages[0].p2p;
  CHECK(links < 0.3 * measured);  // NVLink alone: 230 GB/s
  // GPT 14.6B, 16 stages over 2 nodes: the hop is priced across the network, longer than the floor.
  Job wide = load_scenario(data_dir() / "scenarios/published/zero-bubble-a100-14.6b-1f1b-m48.json");
  const double across = step_costs(wide).stages[0].p2p;
  CHECK(across > wide.cluster.fabric.pipeline_send->seconds(1024.0 * 5120 * 2));
  wide.cluster.fabric.pipeline_send.reset();
  CHECK(step_costs(wide).stages[0].p2p == doctest::Approx(across));
}

TEST_CASE("pipeline_send is read strictly: both figures, with units") {
  auto errors = [](const Json& send) {
    Json p = test::profile_file("hw_profiles/fabrics", "zero-bubble-a100-roce");
    p["pipeline_send"] = send;
    Diagnostics d;
    SourceFile src{"f.json", data_dir(), &d, {}};
    CHECK_FALSE(read_fabric(p, "/cluster/fabric", src));
    std::string all;
    for (const auto& e : d.list()) all += e.pointer + ": " + e.message + "\n";
    return all;
  };
  CHECK(errors({{"latency", "237us"}}).find("/cluster/fabric/pipeline_send: missing key \"bandwidth\"") != std::string::npos);
  CHECK(errors({{"latency", "-1us"}, {"bandwidth", "70GB/s"}}).find("/cluster/fabric/pipeline_send/latency") != std::string::npos);
  CHECK(errors({{"latency", "237us"}, {"bandwidth", "70GB/s"}, {"jitter", 1}}).find("/cluster/fabric/pipeline_send/jitter: unknown key") !=
        std::string::npos);
  CHECK(errors(Json("237us")).find("/cluster/fabric/pipeline_send") != std::string::npos);
}
