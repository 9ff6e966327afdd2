// The full-rank step: classes of GPUs that run alike (colour refinement), perturbations (a slow GPU,
// a degraded link) against their closed forms, and the classes against building every GPU.
#include <doctest/doctest.h>
#include <algorithm>
#include <cmath>
#include <tuple>
#include <fmt/format.h>

#include "models/input/catalogue.hpp"
#include "models/step/step_builder.hpp"
#include "sim/equivalence.hpp"
#include "sim/failure.hpp"
#include "sim/fabric_tree.hpp"
#include "sim/network.hpp"
#include "sim/outputs.hpp"

using namespace plumb;

namespace {

Job mixtral(std::vector<std::string> overrides) {
  // Mixtral on 32 GPUs: PP4 × DP8 with EP8 in a node; all-to-alls over 8 GPUs, gradient reductions over 8.
  overrides.insert(overrides.begin(), {"cluster.nodes=4", "parallel.dp=8", "training.global_batch=64"});
  return load_scenario(data_dir() / "scenarios/mixtral-8x7b-256xh100.json", overrides);
}

double total_compute(const StepSimulation& s, std::size_t gpu) {
  double t = 0;
  for (std::size_t i = 0; i < s.task_gpu.size(); ++i)
    if (static_cast<std::size_t>(s.task_gpu[i]) == gpu && s.task_comm[i] < 0 && s.graph.kind(static_cast<sim::TaskId>(i)) == sim::TaskKind::compute)
      t += sim::to_seconds(s.result.end[i] - s.result.start[i]);
  return t;
}

}  // namespace

TEST_CASE("colour refinement splits items until every group looks the same to every member of a class") {
  // Two groups {0,1} and {2,3}; item 3 differs. Item 2 sees a different item beside it: its own class.
  std::vector<sim::ItemGroup> groups{{0, {{0, 0}, {1, 0}}}, {0, {{2, 0}, {3, 0}}}};
  sim::ItemClasses c = sim::equitable_classes({7, 7, 7, 9}, groups);
  CHECK(c.of == std::vector<std::int32_t>{0, 0, 1, 2});
  CHECK(c.size == std::vector<std::int64_t>{2, 1, 1});
  CHECK(c.first == std::vector<std::int32_t>{0, 2, 3});
  // As the classes see them: {0,1} is one class (no barrier needed), {2,3} two.
  std::vector<sim::ItemGroup> q = sim::class_groups(groups, c);
  REQUIRE(q.size() == 1);
  CHECK(q[0].members.size() == 2);
  // A chain: a difference travels one group per round.
  std::vector<sim::ItemGroup> chain;
  for (std::int32_t i = 0; i + 1 < 6; ++i) chain.push_back({0, {{i, 0}, {i + 1, 1}}});
  sim::ItemClasses line = sim::equitable_classes({1, 0, 0, 0, 0, 0}, chain);
  CHECK(line.first.size() == 6);
  CHECK(line.rounds >= 2);
  // Alike items with alike neighbours stay one class.
  sim::ItemClasses ring = sim::equitable_classes({0, 0, 0, 0}, {{0, {{0, 0}, {1, 0}, {2, 0}, {3, 0}}}});
  CHECK(ring.first.size() == 1);
  CHECK(ring.size[0] == 4);
}

TEST_CASE("--full simulates each class of alike GPUs once and matches building every GPU to the picosecond") {
  // Sampled routing (each EP rank at its own load), a slow GPU and a node whose links run at half speed.
  // DP16 over EP8: two replicas at each EP rank. Sampled routing (each EP rank at its own load) alone;
  // a slow GPU and a node whose links run at half speed alone; both.
  const std::string perturbed = R"(perturbations=[{"gpu": 13, "compute": 0.8}, {"node": 2, "network": 0.5}])";
  for (auto [routing, perturbations, expected] : {std::tuple{"sampled", "perturbations=[]", 32}, std::tuple{"balanced", perturbed.c_str(), 0},
                                                   std::tuple{"sampled", perturbed.c_str(), 64}}) {
    INFO(routing, perturbations);
    Job job = mixtral({"cluster.nodes=8", "parallel.dp=16", "training.global_batch=128",
                       std::string("training.moe_imbalance=") + routing, perturbations});
    StepCosts costs = step_costs(job);
    StepSimulation classes = simulate_step(job, costs, StepMode::full), every = simulate_step(job, costs, StepMode::every_gpu);
    CHECK(every.machine.gpus().size() == 64);
    if (expected > 0) CHECK(classes.machine.gpus().size() == static_cast<std::size_t>(expected));
    else CHECK(classes.machine.gpus().size() < 64);
    CHECK(classes.result.makespan == every.result.makespan);
    for (std::size_t r = 0; r < 4; ++r) {
      CHECK(std::abs(classes.ranks[r].compute - every.ranks[r].compute) < 1e-9);
      CHECK(std::abs(classes.ranks[r].idle - every.ranks[r].idle) < 1e-9);
      for (std::size_t k = 0; k < kCommKinds; ++k) CHECK(std::abs(classes.ranks[r].exposed[k] - every.ranks[r].exposed[k]) < 1e-9);
      CHECK(classes.ranks[r].peak_bytes == every.ranks[r].peak_bytes);
    }
    std::int64_t represented = 0;
    for (std::int64_t n : classes.gpu_count) represented += n;
    CHECK(represented == 64);
  }
  // Without perturbations or sampled loads every replica is alike: one class, the symmetric step.
  Job plain = mixtral({});
  StepCosts plain_costs = step_costs(plain);
  StepSimulation one = simulate_step(plain, plain_costs, StepMode::full), symmetric = simulate_step(plain, plain_costs);
  CHECK(one.machine.gpus().size() == 4);
  CHECK(one.gpu_count[0] == 8);
  CHECK(one.result.makespan == symmetric.result.makespan);
}

TEST_CASE("a slow GPU holds its collectives' peers back by exactly its extra compute when nothing overlaps") {
  // One pipeline rank, no overlap of the gradient reduction: every collective waits for the slow GPU,
  // so the step grows by (1/f − 1) × that GPU's compute, the optimizer included.
  for (double f : {0.5, 0.8}) {
    INFO(f);
    Job base = mixtral({"parallel.pp=1", "parallel.dp=32", "training.global_batch=64", "parallel.overlap_grad_reduce=false", "parallel.zero=0"});
    Job slow = mixtral({"parallel.pp=1", "parallel.dp=32", "training.global_batch=64", "parallel.overlap_grad_reduce=false", "parallel.zero=0",
                        fmt::format(R"(perturbations=[{{"gpu": 5, "compute": {}}}])", f)});
    StepCosts costs = step_costs(base);
    StepSimulation a = simulate_step(base, costs, StepMode::full), b = simulate_step(slow, costs, StepMode::full);
    const double compute = total_compute(a, 0);
    CHECK(b.step_time - a.step_time == doctest::Approx((1 / f - 1) * compute).epsilon(1e-6));
  }
}

TEST_CASE("--full is deterministic: the same timeline byte for byte") {
  Job job = mixtral({"training.moe_imbalance=sampled", R"(perturbations=[{"gpus": [3, 17], "compute": 0.9}])"});
  StepCosts costs = step_costs(job);
  StepSimulation a = simulate_step(job, costs, StepMode::full), b = simulate_step(job, costs, StepMode::full);
  CHECK(sim::chrome_trace(a.graph, a.machine, a.result) == sim::chrome_trace(b.graph, b.machine, b.result));
}

TEST_CASE("a GPU that fails stops its collective's peers at their next barrier, and everything downstream of it") {
  // Two GPUs, each a → b → c of 1 us on one stream; a barrier joins both b's before either c; GPU 2
  // runs d on its own after its a, needing nothing of the others. GPU 1 fails at 1.5 us, inside its b.
  sim::Machine m;
  sim::TaskGraph g;
  const sim::Time us = sim::kPicosPerSecond / 1'000'000;
  std::vector<sim::StreamId> streams;
  for (int i = 0; i < 3; ++i) streams.push_back(m.add_stream(m.add_gpu("gpu", 132), "s"));
  std::vector<std::array<sim::TaskId, 3>> t(2);
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 3; ++k) {
      t[i][k] = g.add_compute("task", streams[i], us);
      if (k > 0) g.add_dependency(t[i][k - 1], t[i][k]);
    }
  sim::TaskId barrier = g.add_marker("barrier");
  for (int i = 0; i < 2; ++i) {
    g.add_dependency(t[i][1], barrier);
    g.add_dependency(barrier, t[i][2]);
  }
  sim::TaskId d0 = g.add_compute("own", streams[2], us), d1 = g.add_compute("own", streams[2], us);
  g.add_dependency(d0, d1);
  g.finalize();
  sim::SimResult r = sim::simulate(g, m);
  std::vector<sim::Stall> s = sim::stalls_after_failures(g, m, r, {std::nullopt, us * 3 / 2, std::nullopt});
  CHECK(s[1].failed);
  CHECK(s[1].stops == us * 3 / 2);
  CHECK_FALSE(s[0].failed);
  CHECK(s[0].stops == 2 * us);  // where its c would have started, after the barrier
  CHECK(s[0].first_blocked == t[0][2]);
  CHECK(s[2].stops == sim::kNever);  // nothing of GPU 2 waits on GPU 1
}

TEST_CASE("a fat tree's tiers: flows crossing a 2:1 leaf get half their NIC, ECMP collisions share an uplink") {
  // 4 nodes of 8 GPUs, one node per rail leaf: a ring over the nodes on every rail crosses every leaf.
  sim::TreeShape shape;
  shape.nodes = 4;
  shape.nodes_per_leaf = 1;
  shape.nic_bandwidth = 50e9;
  shape.leaf_oversubscription = 2;
  auto ring_rates = [](const sim::FabricTree& tree) {
    sim::Network net(tree.topology());
    std::vector<sim::Network::FlowId> ids;
    for (std::int64_t r = 0; r < 8; ++r)
      for (std::int64_t n = 0; n < 4; ++n) ids.push_back(net.start(tree.path(n * 8 + r, ((n + 1) % 4) * 8 + r), 1.0, 0));
    net.recompute(0);
    std::vector<double> out;
    for (auto id : ids) out.push_back(net.rate(id));
    return out;
  };
  for (double rate : ring_rates(sim::FabricTree(shape))) CHECK(rate == doctest::Approx(25e9));
  shape.leaf_oversubscription = 1;
  for (double rate : ring_rates(sim::FabricTree(shape))) CHECK(rate == doctest::Approx(50e9));
  // Paths: within a node none; same leaf two links (NIC up, NIC down); across leaves four; across pods six.
  shape.nodes_per_leaf = 2;
  shape.nodes_per_pod = 4;
  shape.nodes = 8;
  sim::FabricTree tree(shape);
  CHECK(tree.path(0, 5).empty());
  CHECK(tree.path(0, 8).size() == 2);
  CHECK(tree.path(0, 16).size() == 4);
  CHECK(tree.path(0, 40).size() == 6);
  // A flow leaves its node on the destination's rail: GPUs 3 and 5 of node 0 send to GPU 13 (rail 5) from one NIC.
  CHECK(tree.topology().link(tree.path(3, 13).front()).from == tree.topology().link(tree.path(5, 13).front()).from);
  // ECMP over 4 uplinks of a 1:1 leaf: each uplink carries a quarter of the leaf; flows hashed onto one
  // share it, so the slowest gets at most its NIC and at least a quarter leaf over the flows on it.
  sim::TreeShape hashed;
  hashed.nodes = 4;
  hashed.nodes_per_leaf = 1;
  hashed.ecmp_uplinks = 4;
  std::vector<double> rates = ring_rates(sim::FabricTree(hashed));
  const double slowest = *std::min_element(rates.begin(), rates.end());
  CHECK(slowest < 50e9);  // 32 flows on 4 uplinks of 8 NICs' leaves: some collide
}

TEST_CASE("--full prices an oversubscribed fabric's switches: DP rings crossing 2:1 leaves reduce at half speed") {
  Job job = mixtral({"cluster.nodes=8", "parallel.dp=16", "training.global_batch=128", "parallel.overlap_grad_reduce=false"});
  Job congested = mixtral({"cluster.nodes=8", "parallel.dp=16", "training.global_batch=128", "parallel.overlap_grad_reduce=false",
                           "cluster.fabric=" + (data_dir() / "tests/fixtures/fabrics/ndr-oversubscribed.json").string()});
  StepCosts costs = step_costs(job);
  StepSimulation a = simulate_step(job, costs, StepMode::full), b = simulate_step(congested, costs, StepMode::full);
  CHECK_FALSE(a.fabric.modelled);
  REQUIRE(b.fabric.modelled);
  const auto dp = static_cast<std::size_t>(CommKind::dp);
  CHECK(b.fabric.flows[dp] > 0);
  CHECK(b.fabric.slowest[dp] == doctest::Approx(0.5));
  auto reduce_time = [](const StepSimulation& s) {
    for (sim::TaskId t = 0; t < s.graph.size(); ++t)
      if (s.graph.label(t).starts_with("grad reduce")) return sim::to_seconds(s.graph.work(t));
    return 0.0;
  };
  CHECK(reduce_time(b) == doctest::Approx(2 * reduce_time(a)).epsilon(1e-9));
  CHECK(b.step_time > a.step_time);
}
