// Collective cost model: nccl-tests conventions, the published NVLink/NVLS/NDR figures, NCCL's
// latency model at small sizes, and the ±5% cross-check against flow-level simulation on sim/.
#include <doctest/doctest.h>

#include <cmath>

#include "catalogue_fixtures.hpp"
#include "models/costs/collective.hpp"
#include "sim/engine.hpp"

using namespace plumb;

namespace {

CollectiveLinks links(const char* gpu, const char* fabric) { return CollectiveLinks::of(test::gpu(gpu), test::fabric(fabric)); }

constexpr double GiB = 1073741824.0;

}  // namespace

TEST_CASE("nccl-tests bus-bandwidth factors") {
  CHECK(bus_factor(CollectiveOp::all_reduce, 8) == doctest::Approx(1.75));
  CHECK(bus_factor(CollectiveOp::reduce_scatter, 8) == doctest::Approx(0.875));
  CHECK(bus_factor(CollectiveOp::all_gather, 64) == doctest::Approx(63.0 / 64));
  CHECK(bus_factor(CollectiveOp::all_to_all, 16) == doctest::Approx(15.0 / 16));
  CHECK(bus_factor(CollectiveOp::broadcast, 16) == 1.0);
}

TEST_CASE("8× H100 NVLink: NVLS all-reduce near 480 GB/s busbw (algbw ~275), ring ~370") {
  CollectiveLinks l = links("h100-sxm", "dgx-h100-ndr");
  CollectiveCost best = collective_cost(CollectiveOp::all_reduce, 8 * GiB, {8, 1}, l);
  CHECK(best.algo == CollectiveAlgo::nvls);
  CHECK(best.busbw / 1e9 == doctest::Approx(480).epsilon(0.01));
  CHECK(best.algbw / 1e9 == doctest::Approx(275).epsilon(0.01));
  CollectiveCost ring = collective_cost(CollectiveOp::all_reduce, 8 * GiB, {8, 1}, l, CollectiveAlgo::ring);
  CHECK(ring.busbw / 1e9 == doctest::Approx(370).epsilon(0.01));
  // NVLS's 25 us latency (NCCL's model) makes the ring win small messages.
  CHECK(collective_cost(CollectiveOp::all_reduce, 64 << 10, {8, 1}, l).algo == CollectiveAlgo::ring);
}

TEST_CASE("NDR 400 Gb/s: 46–48 GB/s per NIC; a rail-spread ring reaches NVLink speed") {
  CollectiveLinks l = links("h100-sxm", "dgx-h100-ndr");
  CollectiveCost one_per_node = collective_cost(CollectiveOp::all_reduce, 8 * GiB, {16, 16}, l);
  CHECK(one_per_node.busbw / 1e9 >= 45.5);
  CHECK(one_per_node.busbw / 1e9 <= 48);
  // Eight GPUs per node spread the ring's node crossings over eight NICs: min(370, 8 × 46).
  CollectiveCost full_nodes = collective_cost(CollectiveOp::all_reduce, 8 * GiB, {64, 8}, l, CollectiveAlgo::ring);
  CHECK(full_nodes.busbw / 1e9 == doctest::Approx(368).epsilon(0.02));  // less 126 steps' latency
  // All-to-all cannot aggregate NICs: half of a 2-node group's traffic leaves through each GPU's one NIC.
  CollectiveCost a2a = collective_cost(CollectiveOp::all_to_all, 8 * GiB, {16, 2}, l);
  CHECK(a2a.algbw / 1e9 == doctest::Approx(2 * 46).epsilon(0.01));
}

TEST_CASE("DeepSeek's H800: NVLink 160 GB/s inside a node, one 400 Gb/s NIC per GPU across") {
  CollectiveLinks l = links("h800-sxm", "h800-deepseek");
  CHECK(l.nvlink == doctest::Approx(160e9));
  CollectiveCost ring = collective_cost(CollectiveOp::all_reduce, 8 * GiB, {8, 1}, l, CollectiveAlgo::ring);
  CHECK(ring.busbw / 1e9 == doctest::Approx(160).epsilon(0.01));
  CHECK_THROWS_AS(collective_cost(CollectiveOp::all_reduce, GiB, {8, 1}, l, CollectiveAlgo::nvls), std::invalid_argument);
}

TEST_CASE("small messages follow NCCL's latency model: 8-GPU 8-byte all-reduce = 6.6 + 14 × 0.6 us (LL)") {
  CollectiveLinks l = links("h100-sxm", "dgx-h100-ndr");
  CollectiveCost c = collective_cost(CollectiveOp::all_reduce, 8, {8, 1}, l);
  CHECK(c.protocol == Protocol::ll);
  CHECK(c.seconds * 1e6 == doctest::Approx(6.6 + 14 * 0.6).epsilon(1e-3));
  CHECK(collective_cost(CollectiveOp::all_reduce, 8 * GiB, {8, 1}, l, CollectiveAlgo::ring).protocol == Protocol::simple);
  // Across 64 nodes the tree's logarithmic latency beats the ring's 126 steps.
  CHECK(collective_cost(CollectiveOp::all_reduce, 4096, {64, 64}, l).algo == CollectiveAlgo::tree);
}

TEST_CASE("a fabric's latency scales multiply NCCL's tables: base and NVLink hops together, network hops apart") {
  CollectiveLinks l = links("h100-sxm", "dgx-h100-ndr");
  CHECK(l.nvlink_latency_scale == 1.0);
  CHECK(l.network_latency_scale == 1.0);
  l.nvlink_latency_scale = 2.0;
  l.network_latency_scale = 3.0;
  // Inside a node every latency term is NVLink's: the 8-byte LL all-reduce doubles.
  CHECK(collective_cost(CollectiveOp::all_reduce, 8, {8, 1}, l).seconds * 1e6 == doctest::Approx(2 * (6.6 + 14 * 0.6)).epsilon(1e-3));
  // The tree across 64 nodes, one GPU each, LL, 8 bytes (bandwidth well under 0.01 us): base 6.8 × 2
  // + 2 passes × depth 6 × 5.0 us × 3.
  CollectiveCost tree = collective_cost(CollectiveOp::all_reduce, 8, {64, 64}, l, CollectiveAlgo::tree, Protocol::ll);
  CHECK(tree.seconds * 1e6 == doctest::Approx(6.8 * 2 + 2 * 6 * 5.0 * 3).epsilon(1e-4));
  // A fabric profile carries them into the links.
  FabricSpec f = test::fabric("dgx-h100-ndr");
  f.network_latency_scale = 1.5;
  CHECK(CollectiveLinks::of(test::gpu("h100-sxm"), f).network_latency_scale == 1.5);
  CHECK(CollectiveLinks::of(test::gpu("h100-sxm"), f).nvlink_latency_scale == 1.0);
}

TEST_CASE("algorithms that do not apply are refused with a reason") {
  CollectiveLinks l = links("h100-sxm", "dgx-h100-ndr");
  CHECK_THROWS_WITH(collective_cost(CollectiveOp::all_reduce, GiB, {16, 2}, l, CollectiveAlgo::nvls),
                    "NVLS runs inside one NVSwitch node; use hierarchical across nodes");
  CHECK_THROWS_WITH(collective_cost(CollectiveOp::all_to_all, GiB, {16, 2}, l, CollectiveAlgo::tree),
                    "all_to_all is point-to-point; choose auto");
  CHECK_THROWS_WITH(collective_cost(CollectiveOp::all_reduce, GiB, {12, 5}, l), "a group of 12 GPUs cannot spread evenly over 5 nodes");
}

namespace {

// A ring all-reduce built from flows on a rail-optimized fat tree, as NCCL runs it: k channels,
// each a ring through every GPU with its node crossings on a different rail (node orders alternate
// direction so that each crossing stays on one rail), 2(n−1) steps per channel, a chunk of
// S/(n·k) per step. Hop latencies are NCCL's Simple-protocol ones (NVLink 3.4 us over two links,
// network 14 us over four), and NCCL's 8.4 us base latency opens the collective.
double flow_level_ring(int nodes, int per_node, double bytes, const CollectiveLinks& l) {
  sim::NodeShape node{per_node, l.nvlink, 1'700'000};
  sim::FabricShape fabric;
  fabric.nic_bandwidth = l.network;
  fabric.pcie_bandwidth = 1e12;
  fabric.nic_latency = 3'500'000;
  sim::Topology topo = nodes == 1 ? sim::nvswitch_node(node) : sim::rail_optimized_fat_tree(nodes, node, fabric);
  const int n = nodes * per_node, channels = per_node;
  sim::Machine machine;
  std::vector<std::vector<sim::StreamId>> streams(static_cast<std::size_t>(n));
  std::vector<sim::StreamId> launch;
  for (int g = 0; g < n; ++g) {
    std::int32_t gpu = machine.add_gpu("gpu" + std::to_string(g), 132, topo.gpus()[static_cast<std::size_t>(g)]);
    launch.push_back(machine.add_stream(gpu, "launch"));
    for (int c = 0; c < channels; ++c) streams[static_cast<std::size_t>(g)].push_back(machine.add_stream(gpu, "channel"));
  }
  sim::TaskGraph graph;
  std::vector<sim::TaskId> start;
  for (int g = 0; g < n; ++g) start.push_back(graph.add_compute("base latency", launch[static_cast<std::size_t>(g)], 8'400'000, 1));
  const double chunk = bytes / n / channels;
  for (int c = 0; c < channels; ++c) {
    std::vector<int> order;
    for (int m = 0; m < nodes; ++m)
      for (int i = 0; i < per_node; ++i) {
        int local = m % 2 == 0 ? (c + 1 + i) % per_node : (c + per_node - i) % per_node;
        order.push_back(m * per_node + local);
      }
    std::vector<sim::TaskId> previous(static_cast<std::size_t>(n), sim::kNoTask);
    for (int step = 0; step < 2 * (n - 1); ++step) {
      std::vector<sim::TaskId> current(static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i) {
        int from = order[static_cast<std::size_t>(i)], to = order[static_cast<std::size_t>((i + 1) % n)];
        sim::TaskId t = graph.add_transfer("ring", streams[static_cast<std::size_t>(from)][static_cast<std::size_t>(c)],
                                           topo.gpus()[static_cast<std::size_t>(from)], topo.gpus()[static_cast<std::size_t>(to)], chunk);
        graph.add_dependency(step == 0 ? start[static_cast<std::size_t>(from)] : previous[static_cast<std::size_t>((i + n - 1) % n)], t);
        current[static_cast<std::size_t>(i)] = t;
      }
      previous = current;
    }
  }
  graph.finalize();
  return sim::to_seconds(sim::simulate(graph, machine, &topo).makespan);
}

}  // namespace

TEST_CASE("cross-check: the ring's closed form is within 5% of its flow-level simulation, 8–64 GPUs") {
  CollectiveLinks l = links("h100-sxm", "dgx-h100-ndr");
  for (auto [nodes, per_node] : {std::pair{1, 8}, std::pair{8, 1}, std::pair{16, 1}, std::pair{64, 1}, std::pair{2, 8},
                                 std::pair{4, 8}, std::pair{8, 8}, std::pair{16, 4}})
  for (double bytes : {256.0 * 1048576, 4.0 * 1048576, 64.0 * 1024}) {  // bandwidth-, mixed- and latency-bound
    double closed = collective_cost(CollectiveOp::all_reduce, bytes, {nodes * per_node, nodes}, l, CollectiveAlgo::ring,
                                    Protocol::simple).seconds;
    double flows = flow_level_ring(nodes, per_node, bytes, l);
    INFO(nodes << " nodes × " << per_node << " GPUs, " << bytes << " bytes: closed form " << closed * 1e3 << " ms, flows "
              << flows * 1e3 << " ms");
    CHECK(std::fabs(closed / flows - 1) <= 0.05);
  }
}

TEST_CASE("DeepSeek-V3's node-limited dispatch: network-bound up to 3.2 experts per node (report §3.2.2)") {
  // NVLink 160 GB/s is 3.2× IB's 50 GB/s: with tokens limited to 4 nodes, NVLink is not the
  // bottleneck until a token picks 4 × 3.2 = 12.8 experts. Full nodes of 8 GPUs, EP64 over 8 nodes.
  CollectiveLinks l;
  l.nvlink = 160e9;
  l.network = 50e9;
  GroupPlacement ep{64, 8};
  auto dispatch = [&](std::int64_t k, std::int64_t max_nodes) { return moe_dispatch_cost({4096, 7168, k, max_nodes}, ep, l); };
  DispatchCost eight = dispatch(8, 4);
  CHECK(eight.network_bound);
  CHECK(eight.network_bytes == doctest::Approx(4096.0 * 7168 * 4 * 7 / 8));  // 4 nodes, 1/8 of them its own
  // The crossover: network time M(N−1)/N·b/IB equals NVLink time k(1−1/8)·b/NVLink at k = 4 × 3.2 = 12.8.
  CHECK(dispatch(12, 4).network_bound);
  CHECK_FALSE(dispatch(13, 4).network_bound);
  // Without the node limit a top-8 token reaches 8·(1 − (7/8)^8) ≈ 5.25 of 8 nodes: more network bytes.
  CHECK(dispatch(8, 0).network_bytes / eight.network_bytes == doctest::Approx(8 * (1 - std::pow(7.0 / 8, 8)) / 4));
}

TEST_CASE("concurrent collectives on the same GPUs share their links, as the flow-level network shares them") {
  CollectiveLinks l = links("h100-sxm", "dgx-h100-ndr");
  const double bytes = 256.0 * 1048576;
  double alone = collective_cost(CollectiveOp::all_reduce, bytes, {8, 1}, l, CollectiveAlgo::ring, Protocol::simple).seconds;
  double both = collective_cost(CollectiveOp::all_reduce, bytes, {8, 1}, shared_links(l, 2), CollectiveAlgo::ring,
                                Protocol::simple).seconds;
  CHECK(both > 1.9 * (alone - 60e-6));  // the bandwidth term doubles; latency does not
  // Two identical rings at once on the flow-level network take what one takes with half the links.
  auto flows = [&](int rings) {
    sim::Topology topo = sim::nvswitch_node({8, l.nvlink, 1'700'000});
    sim::Machine machine;
    std::vector<std::int32_t> gpu;
    for (int g = 0; g < 8; ++g) gpu.push_back(machine.add_gpu("gpu" + std::to_string(g), 132, topo.gpus()[static_cast<std::size_t>(g)]));
    sim::TaskGraph graph;
    for (int r = 0; r < rings; ++r) {
      std::vector<sim::StreamId> streams;
      std::vector<sim::TaskId> start;
      for (int g = 0; g < 8; ++g) {
        streams.push_back(machine.add_stream(gpu[static_cast<std::size_t>(g)], "ring"));
        start.push_back(graph.add_compute("base", streams.back(), 8'400'000, 1));
      }
      for (int c = 0; c < 8; ++c) {  // 8 channels, as the closed form assumes inside a node
        std::vector<sim::StreamId> ch;
        for (int g = 0; g < 8; ++g) ch.push_back(machine.add_stream(gpu[static_cast<std::size_t>(g)], "channel"));
        std::vector<sim::TaskId> previous(8);
        for (int step = 0; step < 14; ++step) {
          std::vector<sim::TaskId> current(8);
          for (int i = 0; i < 8; ++i) {
            sim::TaskId t = graph.add_transfer("ring", ch[static_cast<std::size_t>(i)], topo.gpus()[static_cast<std::size_t>(i)],
                                               topo.gpus()[static_cast<std::size_t>((i + 1) % 8)], bytes / 64);  // 2·(7/8)·S / 14 steps / 8 channels
            graph.add_dependency(step == 0 ? start[static_cast<std::size_t>(i)] : previous[static_cast<std::size_t>((i + 7) % 8)], t);
            current[static_cast<std::size_t>(i)] = t;
          }
          previous = current;
        }
      }
    }
    graph.finalize();
    return sim::to_seconds(sim::simulate(graph, machine, &topo).makespan);
  };
  // Relative comparisons: doctest's Approx adds an absolute 1 × epsilon, too loose for milliseconds.
  CHECK(std::fabs(flows(1) / alone - 1) <= 0.05);
  CHECK(std::fabs(flows(2) / both - 1) <= 0.05);
}
