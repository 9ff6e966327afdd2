// Flow-level network and topology: max-min fair sharing by hand calculation, the ring all-reduce
// closed form, routes through the topology builders.
#include <doctest/doctest.h>
#include <set>

#include "sim/engine.hpp"
#include "sim/network.hpp"
#include "sim/topology.hpp"

using namespace plumb::sim;

namespace {

// a —L1— b —L2— c, capacities in bytes/s.
struct Line {
  Topology t;
  Topology::Vertex a, b, c;
  Line(double l1, double l2) {
    a = t.add_vertex(VertexKind::nic, "a");
    b = t.add_vertex(VertexKind::leaf, "b");
    c = t.add_vertex(VertexKind::nic, "c");
    t.connect(a, b, l1, 0);
    t.connect(b, c, l2, 0);
  }
};

// n GPUs on one NVSwitch with one transfer stream each.
struct Node {
  Topology topology;
  Machine machine;
  std::vector<StreamId> streams;
  Node(int n, double bandwidth, Time hop_latency)
      : topology(nvswitch_node({n, bandwidth, hop_latency})) {
    for (int i = 0; i < n; ++i) {
      std::int32_t gpu = machine.add_gpu("gpu" + std::to_string(i), 132, topology.gpus()[static_cast<std::size_t>(i)]);
      streams.push_back(machine.add_stream(gpu, "comm"));
    }
  }
};

}  // namespace

TEST_CASE("two flows on one link each get half of it") {
  Line line(100e9, 1e12);
  Network net(line.t);
  auto f1 = net.start(line.t.route(line.a, line.b), 1e9, 0);
  auto f2 = net.start(line.t.route(line.a, line.b), 1e9, 0);
  net.recompute(0);
  CHECK(net.rate(f1) == doctest::Approx(50e9));
  CHECK(net.rate(f2) == doctest::Approx(50e9));
  CHECK(net.transmit_end(f1) == from_seconds(1e9 / 50e9));
}

TEST_CASE("a flow that ends frees its bandwidth for the others at that instant") {
  // 1 GB and 2 GB on a 100 GB/s link: both at 50 GB/s until the first ends at 20 ms, then the
  // second sends its last 1 GB at 100 GB/s: 30 ms in all.
  Node node(2, 100e9, 0);
  TaskGraph g;
  const auto& gpus = node.topology.gpus();
  Machine& m = node.machine;
  StreamId extra = m.add_stream(0, "comm2");
  TaskId small = g.add_transfer("small", node.streams[0], gpus[0], gpus[1], 1e9);
  TaskId large = g.add_transfer("large", extra, gpus[0], gpus[1], 2e9);
  g.finalize();
  SimResult r = simulate(g, m, &node.topology);
  CHECK(r.end[small] == doctest::Approx(static_cast<double>(from_seconds(0.020))).epsilon(1e-9));
  CHECK(r.end[large] == doctest::Approx(static_cast<double>(from_seconds(0.030))).epsilon(1e-9));
}

TEST_CASE("three flows with different bottlenecks reach the max-min rates") {
  // L1 = 10, L2 = 4. f2 crosses both, f1 only L1, f3 only L2. L2 is the bottleneck: f2 and f3 get 2
  // each; f1 takes what L1 has left, 10 − 2 = 8.
  Line line(10e9, 4e9);
  Network net(line.t);
  auto f1 = net.start(line.t.route(line.a, line.b), 1e9, 0);
  auto f2 = net.start(line.t.route(line.a, line.c), 1e9, 0);
  auto f3 = net.start(line.t.route(line.b, line.c), 1e9, 0);
  net.recompute(0);
  CHECK(net.rate(f1) == doctest::Approx(8e9));
  CHECK(net.rate(f2) == doctest::Approx(2e9));
  CHECK(net.rate(f3) == doctest::Approx(2e9));
  // f3 ends first (at 0.5 s); f2 then has L2 to itself, 4 GB/s, and f1 keeps 6.
  Time t = net.transmit_end(f3);
  CHECK(t == from_seconds(0.5));
  net.stop(f3, t);
  net.recompute(t);
  CHECK(net.rate(f2) == doctest::Approx(4e9));
  CHECK(net.rate(f1) == doctest::Approx(6e9));
}

TEST_CASE("a ring all-reduce built from flows takes 2(n−1)/n · S/B + 2(n−1)·α") {
  for (int n : {2, 4, 8}) {
    const double S = 1e9, B = 100e9;
    const Time hop = 1'500'000;  // 1.5 us per hop; GPU→NVSwitch→GPU is two hops, so α = 3 us
    Node node(n, B, hop);
    TaskGraph g;
    const auto& gpus = node.topology.gpus();
    std::vector<TaskId> previous(static_cast<std::size_t>(n), kNoTask);
    for (int step = 0; step < 2 * (n - 1); ++step) {
      std::vector<TaskId> current;
      for (int i = 0; i < n; ++i) {
        TaskId t = g.add_transfer("ring step", node.streams[static_cast<std::size_t>(i)], gpus[static_cast<std::size_t>(i)],
                                  gpus[static_cast<std::size_t>((i + 1) % n)], S / n);
        // A GPU sends its next chunk once it has received the previous one from its left neighbour.
        if (step > 0) g.add_dependency(previous[static_cast<std::size_t>((i + n - 1) % n)], t);
        current.push_back(t);
      }
      previous = current;
    }
    g.finalize();
    SimResult r = simulate(g, node.machine, &node.topology);
    double alpha = 2 * to_seconds(hop);
    double expected = 2.0 * (n - 1) / n * S / B + 2.0 * (n - 1) * alpha;
    INFO("n = " << n);
    CHECK(to_seconds(r.makespan) == doctest::Approx(expected).epsilon(1e-9));
  }
}

TEST_CASE("routes through the builders have the expected hops, and ECMP spreads over spines") {
  NodeShape node{8, 450e9, 0};
  FabricShape fabric;
  fabric.nic_bandwidth = 50e9;
  fabric.nodes_per_leaf = 2;
  Topology ft = rail_optimized_fat_tree(4, node, fabric);  // 2 leaf groups per rail, 2 spines
  const auto& g = ft.gpus();
  CHECK(ft.route(g[0], g[1]).size() == 2);    // GPU → NVSwitch → GPU
  CHECK(ft.route(g[0], g[8]).size() == 4);    // GPU → NIC → leaf → NIC → GPU (same rail, same leaf)
  CHECK(ft.route(g[0], g[16]).size() == 6);   // … leaf → spine → leaf … (other leaf group)
  CHECK(ft.route(g[0], g[16], 1) == ft.route(g[0], g[16], 1));  // deterministic
  std::set<std::uint32_t> spines;
  for (std::uint64_t salt = 0; salt < 16; ++salt) spines.insert(ft.link(ft.route(g[0], g[16], salt)[3]).from);
  CHECK(spines.size() == 2);
  fabric.leaves_per_pod = 2;
  fabric.nodes_per_leaf = 1;
  Topology clos = three_tier_clos(8, node, fabric);  // 8 leaves of one node, 4 pods
  const auto& c = clos.gpus();
  CHECK(clos.route(c[0], c[8]).size() == 6);   // within a pod: leaf → pod spine → leaf
  CHECK(clos.route(c[0], c[63]).size() == 8);  // across pods: … pod spine → core → pod spine …
}

TEST_CASE("oversubscription divides the uplink bandwidth") {
  NodeShape node{1, 450e9, 0};
  FabricShape fabric;
  fabric.nic_bandwidth = 50e9;
  fabric.nodes_per_leaf = 4;
  fabric.spines = 2;
  fabric.oversubscription = 2.0;
  Topology ft = rail_optimized_fat_tree(8, node, fabric);
  const auto& g = ft.gpus();
  auto path = ft.route(g[0], g[4]);
  REQUIRE(path.size() == 6);
  // 4 nodes × 50 GB/s down, half of it up, over 2 spines: 50 GB/s per leaf–spine link.
  CHECK(ft.link(path[2]).bandwidth == doctest::Approx(50e9));
}

TEST_CASE("incremental re-sharing gives every flow the rate a full max-min from scratch gives it") {
  // A fat tree with ECMP and a 3:1 leaf: flows of random pairs start and stop in random order; after
  // every re-share each active flow's rate equals the one a fresh network computes for the same flows.
  FabricShape fabric;
  fabric.nic_bandwidth = 50e9;
  fabric.nodes_per_leaf = 2;
  fabric.spines = 4;
  fabric.oversubscription = 3;
  Topology t = rail_optimized_fat_tree(8, NodeShape{}, fabric);
  Network net(t);
  std::vector<std::vector<LinkId>> path;
  std::vector<Network::FlowId> live;
  std::uint64_t x = 7;
  auto next = [&x](std::uint64_t n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return (x >> 33) % n;
  };
  std::size_t partial = 0;
  for (int round = 0; round < 300; ++round) {
    const bool start = live.empty() || next(3) != 0;
    for (std::uint64_t k = 0, n = 1 + next(4); k < n; ++k) {
      if (start) {
        const auto a = static_cast<std::uint32_t>(next(64));
        auto b = static_cast<std::uint32_t>(next(63));
        if (b >= a) ++b;
        std::vector<LinkId> p = t.route(t.gpus()[a], t.gpus()[b], next(1000));
        const Network::FlowId id = net.start(p, 1e6, 0);
        if (path.size() <= id) path.resize(id + 1);
        path[id] = p;
        live.push_back(id);
      } else if (!live.empty()) {
        const std::size_t i = next(live.size());
        net.stop(live[i], 0);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    net.recompute(0);
    partial += net.refilled() < live.size();
    Network fresh(t);
    std::vector<Network::FlowId> ids;
    for (Network::FlowId id : live) ids.push_back(fresh.start(path[id], 1e6, 0));
    fresh.recompute(0);
    for (std::size_t i = 0; i < live.size(); ++i) REQUIRE(net.rate(live[i]) == doctest::Approx(fresh.rate(ids[i])).epsilon(1e-9));
  }
  CHECK(partial > 50);  // most re-shares kept some flows as they were
}
