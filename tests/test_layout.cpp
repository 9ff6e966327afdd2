// Layout rules, stage splits, rank placement and the schedule shapes the memory model uses.
#include <doctest/doctest.h>
#include <numeric>
#include <set>

#include "models/input/catalogue.hpp"
#include "models/scenario/job.hpp"
#include "models/memory/memory.hpp"
#include "models/parallel/placement.hpp"

using namespace plumb;

namespace {

Job scenario(const std::string& name, const std::vector<std::string>& sets = {}) {
  return load_scenario(data_dir() / "scenarios" / (name + ".json"), sets);
}

std::string load_error(const std::string& name, const std::vector<std::string>& sets) {
  try {
    scenario(name, sets);
  } catch (const InputError& e) {
    std::string text;
    for (const Diagnostic& d : e.diagnostics()) text += (text.empty() ? "" : "\n") + d.pointer + ": " + d.message;
    return text;
  }
  return "no error";
}

const GroupSpan& span(const std::vector<GroupSpan>& spans, const std::string& kind) {
  for (const GroupSpan& s : spans)
    if (parallel_dim_name(s.kind) == kind) return s;
  FAIL("no group " << kind);
  return spans.front();
}

}  // namespace

TEST_CASE("balanced split counts embedding, head and MTP as layers (Megatron account-for-* rule)") {
  // DeepSeek-V3: 61 layers + embedding + head + 1 MTP = 64 slots over 16 stages.
  std::vector<std::int64_t> ds = balanced_split(61, 1, 16);
  REQUIRE(ds.size() == 16);
  CHECK(ds.front() == 3);
  CHECK(ds.back() == 2);
  CHECK(std::accumulate(ds.begin(), ds.end(), std::int64_t{0}) == 61);
  // Llama 3 405B: 126 layers, first and last stage one short (Llama 3 paper §3.3.2).
  std::vector<std::int64_t> ll = balanced_split(126, 0, 16);
  CHECK(ll.front() == 7);
  CHECK(ll.back() == 7);
  CHECK(std::count(ll.begin(), ll.end(), 8) == 14);
  CHECK(balanced_split(2, 0, 8).empty());
}

TEST_CASE("layout rules are checked with the numbers in the message") {
  std::string tiling = load_error("deepseek-v3-2048xh800", {"parallel.dp=64"});
  CHECK(tiling.find("/parallel: tp 1 × cp 1 × pp 16 × dp 64 = 1024 GPUs, but the cluster has 256 nodes × 8 = 2048 GPUs") !=
        std::string::npos);
  CHECK(load_error("deepseek-v3-2048xh800", {"parallel.ep=48"}) ==
        "/parallel/ep: ep 48 does not divide the 256 routed experts (from --set parallel.ep=48)\n"
        "/parallel/ep: ep 48 × etp 1 = 48 does not divide tp 1 × cp 1 × dp 128 = 128 (from --set parallel.ep=48)");
  CHECK(load_error("deepseek-v3-2048xh800", {"training.global_batch=15000"}) ==
        "/training/global_batch: 15000 sequences are not a multiple of micro_batch 1 × dp 128 = 128 (from --set "
        "training.global_batch=15000)");
  CHECK(load_error("deepseek-v3-2048xh800", {"training.global_batch=3072"}) ==
        "/parallel/micro_batch: dualpipe needs an even number of micro-batches ≥ 2·pp = 32, got 24 (m = global_batch 3072 / "
        "(micro_batch 1 × dp 128))");
  CHECK(load_error("gpt3-175b-megatron", {"parallel.tp=64", "parallel.dp=1"}) ==
        "/parallel/tp: tp 64 does not divide the 96 attention heads (from --set parallel.tp=64)");
}

TEST_CASE("an even split that does not divide the layers says how to fix it") {
  std::string e = load_error("llama3-405b-16k-h100", {"parallel.split=even"});
  CHECK(e == "/parallel/pp: 32 pipeline stages (interleaved with pp 16, vp 2) do not divide 126 layers; set \"split\": "
             "\"balanced\" or give \"stage_layers\"");
}

TEST_CASE("DeepSeek-V3 placement: EP64 spans 8 nodes, DP and PP 16 nodes (V3 report §3.1)") {
  Job job = scenario("deepseek-v3-2048xh800");
  auto placement = Placement::make(job.layout, job.cluster.fabric.gpus_per_node, nullptr);
  REQUIRE(placement);
  auto spans = placement->spans();
  CHECK(span(spans, "ep").nodes_max == 8);
  CHECK(span(spans, "ep").gpus_per_node_max == 8);
  CHECK(span(spans, "edp").size == 2);
  CHECK(span(spans, "edp").nodes_min == 2);
  CHECK(span(spans, "dp").nodes_max == 16);
  CHECK(span(spans, "pp").nodes_max == 16);
  CHECK(span(spans, "pp").groups == 128);
  // Putting expert-DP inside EP spreads each EP group over twice the nodes.
  job.layout.order = {"tp", "cp", "dp", "ep", "pp"};
  auto spread = Placement::make(job.layout, 8, nullptr)->spans();
  CHECK(span(spread, "ep").nodes_max == 16);
  CHECK(span(spread, "ep").gpus_per_node_max == 4);
}

TEST_CASE("every rank has distinct dense and expert coordinates") {
  Job job = scenario("mixtral-8x7b-256xh100");
  auto placement = Placement::make(job.layout, 8, nullptr);
  std::set<std::array<std::int64_t, 4>> dense, expert;
  for (std::int64_t r = 0; r < job.layout.gpus(); ++r) {
    RankCoords c = placement->coords(r);
    dense.insert({c.tp, c.cp, c.dp, c.pp});
    expert.insert({c.etp, c.ep, c.edp, c.pp});
  }
  CHECK(dense.size() == static_cast<std::size_t>(job.layout.gpus()));
  CHECK(expert.size() == static_cast<std::size_t>(job.layout.gpus()));
}

TEST_CASE("an order that puts pp inside the expert dimensions is refused") {
  ParallelLayout p;
  p.tp = 2; p.pp = 2; p.dp = 2; p.ep = 2;
  p.order = {"tp", "cp", "pp", "dp", "ep"};
  std::string why;
  CHECK_FALSE(Placement::make(p, 8, &why));
  CHECK(why.find("keep pp outside") != std::string::npos);
}

TEST_CASE("schedule shapes: stages held and peak in-flight micro-batches (published tables)") {
  const std::int64_t p = 8, m = 64;
  auto total = [&](ScheduleKind s, std::int64_t r, std::int64_t vp = 1) {
    auto c = inflight_per_stage(s, r, {.ranks = p, .microbatches = m, .vp = vp});
    return std::accumulate(c.begin(), c.end(), 0.0);
  };
  CHECK(total(ScheduleKind::one_f_one_b, 0) == p);      // 1F1B: p on the first rank
  CHECK(total(ScheduleKind::one_f_one_b, p - 1) == 1);
  CHECK(total(ScheduleKind::gpipe, 3) == m);
  CHECK(total(ScheduleKind::zb_h1, 0) == p);            // ZB-H1: same as 1F1B
  CHECK(total(ScheduleKind::zb_h2, 0) == 2 * p - 1);    // ZB-H2: (2p−1)·M_B
  CHECK(total(ScheduleKind::zb_v, 0) == 2 * p);         // ZB-V: p·M_B = 2p half-size chunks
  for (std::int64_t r = 0; r < p; ++r) {
    CHECK(total(ScheduleKind::dualpipe, r) == p + 1);      // DualPipe: PP+1 on every rank
    CHECK(total(ScheduleKind::dualpipe_v, r) == 2 * p + 1);  // DualPipeV: PP+1 with PP = 2·ranks stages
  }
  // Interleaved, first rank: p·v·(1 + (p−1)/(pv)) chunk activations (Korthikanti et al. §4.2.3).
  CHECK(total(ScheduleKind::interleaved, 0, 2) == doctest::Approx(p * 2 * (1.0 + (p - 1.0) / (p * 2.0))));
  CHECK(stages_of_rank(ScheduleKind::dualpipe, 2, p, 1) == std::vector<std::int64_t>{2, 5});
  CHECK(stages_of_rank(ScheduleKind::dualpipe_v, 2, p, 1) == std::vector<std::int64_t>{2, 13});
  CHECK(stages_of_rank(ScheduleKind::interleaved, 1, p, 3) == std::vector<std::int64_t>{1, 9, 17});
  CHECK(inflight_per_stage(ScheduleKind::one_f_one_b, 0, {.ranks = p, .microbatches = 3, .vp = 1}) == std::vector<double>{3});  // m < p caps it
}
