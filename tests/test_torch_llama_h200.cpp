// torchtitan's Llama 3.1 8B step as PyTorch ran it on a lent H200 (tests/fixtures/gpu/h200-2026-11-27:
// scripts/torch-llama-step, forward and backward of local batch 2 × 8192, eager or compiled, op-level
// selective or full activation checkpointing, 2 and 32 layers) against plumb's prediction of the same
// step, and the eager elementwise kernels priced as PyTorch runs them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "models/costs/flops.hpp"
#include "models/costs/op_cost.hpp"
#include "step_fixtures.hpp"
#include "test_files.hpp"

using namespace plumb;
using namespace plumb::test;

namespace {

const std::filesystem::path kDir = data_dir() / "tests/fixtures/gpu/h200-2026-11-27";

// plumb's forward and backward of the fixture's step (one micro-batch, one GPU): what the CUDA events
// around forward + backward timed, the optimizer left out as the script leaves it.
double predicted_ms(const std::string& variant, std::int64_t layers) {
  const bool compiled = variant.starts_with("compile");
  const std::string recompute = variant.ends_with("-op") ? "alternate_matmuls" : "full";
  const Job job = load_scenario(kDir / "torch-llama-8b.json",
                                {fmt::format("model.layers={}", layers), fmt::format("training.compile={}", compiled),
                                 fmt::format("parallel.recompute=[\"{}\"]", recompute)});
  const StageCost s = stage_costs(job);
  return 1e3 * (s.forward.compute() + s.backward.compute());
}

const LayerOp& find_op(const std::vector<LayerOp>& ops, const std::string& name) {
  for (const LayerOp& o : ops)
    if (o.name == name) return o;
  FAIL("no op " << name);
  return ops.front();
}

}  // namespace

TEST_CASE("measured on an H200: torchtitan's 8B step in PyTorch, eager and compiled, op-level and full recomputation, within 10%") {
  // Measured (CUDA events, median of 5 steps): eager-op 221.3 / 2022.4 ms at 2 / 32 layers,
  // compile-op 206.9 / 1778.8, eager-full 239.8 / 2280.2, compile-full 220.4 / 2023.4. Before this
  // session's terms, 32 layers were predicted −12.8%, −13.9%, −9.7%, −9.7%; then −3.0%, −6.9%, −0.3%,
  // −2.7%; with torchtitan's separate wq/wk/wv and w1/w3 GEMMs (session 30) −2.8%, −6.6%, −0.1%, −2.4%. FlashAttention-2's efficiencies come from the eager-op profile itself (hw_profiles), so that
  // variant agrees on attention by construction; full AC (the forward twice) and the compiled runs do not
  // share that. What is left is the compiled runs' GEMMs and attention, 4–7% slower than eager at the same
  // shapes (less memory-bound time between them at the 700 W limit; docs/fidelity.md).
  int checked = 0;
  for (const char* file : {"torch-llama.json", "torch-llama-full.json"}) {
    const Json doc = Json::parse(file_bytes(kDir / file));
    REQUIRE(doc.at("device").get<std::string>() == "NVIDIA H200");
    CHECK(doc.at("errors").empty());
    for (const auto& [variant, result] : doc.at("results").items()) {
      if (variant == "optimizer") continue;
      for (const Json& depth : result.at("depths")) {
        const auto layers = depth.at("layers").get<std::int64_t>();
        const double measured = depth.at("step_ms_median").get<double>();
        const double predicted = predicted_ms(variant, layers);
        INFO(variant, " ", layers, " layers: measured ", measured, " ms, predicted ", predicted, " ms");
        CHECK(std::abs(predicted / measured - 1) < 0.10);
        // plumb is faster than PyTorch everywhere: the misses left are one-sided (what the GPU's
        // clock takes under its power limit is not priced at 700 W).
        CHECK(predicted < measured);
        ++checked;
      }
    }
  }
  CHECK(checked == 8);
}

TEST_CASE("measured on an H200: a training step at the 700 W limit holds its clock above where a GEMM loop settles") {
  // nvidia-smi sampled every 200 ms through the steps above (clocks-torch-llama*.csv). Where the board drew
  // over 650 W (at its 700 W limit) the SM clock's median sat at 1,620-1,635 MHz, where ml-engineering's
  // GEMM loop on an H200 settles at 1,465 (MSMF, ~693 W): why the Hopper profiles price a step at their
  // isolated-call rates at 700 W and scale only from there (hw_profiles/gpus/h100-sxm.json).
  for (const char* file : {"clocks-torch-llama.csv", "clocks-torch-llama-full.csv"}) {
    std::istringstream in(file_bytes(kDir / file));
    std::string line;
    std::getline(in, line);  // the header
    std::vector<double> clocks;
    while (std::getline(in, line)) {
      std::vector<std::string> cells;
      std::istringstream row(line);
      for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
      REQUIRE(cells.size() == 5);
      if (std::stod(cells[3]) > 650) clocks.push_back(std::stod(cells[1]));
    }
    INFO(file);
    REQUIRE(clocks.size() > 100);
    std::nth_element(clocks.begin(), clocks.begin() + static_cast<std::ptrdiff_t>(clocks.size() / 2), clocks.end());
    const double median = clocks[clocks.size() / 2];
    CHECK(median > 1465 * 1.08);
    CHECK(median < 1980);
  }
}

TEST_CASE("PyTorch's unvectorized elementwise kernels take the longer of their bytes and their elements") {
  // torchtitan's eager RMSNorm forward on the 500 W H100 96 GB (frameworks/torchtitan-2024-12.json):
  // 36 bytes per element, of which a bf16-to-fp32 cast (6), a multiply by the broadcast rsqrt (8) and by
  // the broadcast weight (4) run element by element. HBM 2.4 TB/s × 0.896; 3.4e11 elements/s measured on
  // the H200, × ((500 − 70) / (700 − 70))^0.53 for the 500 W clock (hw_profiles/gpus).
  const Job job = scenario("published/torchtitan-h100-8b-fsdp8-sac.json");
  const OpContext c = op_context(job.layout, job.training, job.cluster.gpu);
  const std::vector<LayerOp> ops = layer_ops(job.model, 0, c);
  const LayerOp& norm = find_op(ops, "attention norm");
  const double n = 2.0 * 8192 * 4096, bw = 2.4e12 * 0.896, rate = 3.4e11 * std::pow(430.0 / 630.0, 0.53);
  REQUIRE(norm.elements == doctest::Approx(n));
  const double expected = 18 * n / bw + std::max(6 * n / bw, n / rate) + std::max(8 * n / bw, n / rate) + std::max(4 * n / bw, n / rate);
  GpuSpec chip = job.cluster.gpu;  // one typical chip, not the job's slowest of 8 (chip_spread)
  chip.slowest_chip_scale = 1.0;
  CHECK(op_time(norm, 0, chip, job.training).seconds == doctest::Approx(expected).epsilon(1e-9));
  // There the HBM2e bytes bind the 8-byte multiply and the elements the cast and the 4-byte multiply
  // (7.73 bytes' time each): +54.6% on those two over their bytes alone, the norm's forward +15.2%.
  CHECK(expected / (36 * n / bw) - 1 == doctest::Approx(0.152).epsilon(0.01));
  // The strided K/V copy: its forward bytes over HBM at 4.8 TB/s on the H200 would take a quarter of
  // what its elements take at the measured rate (PyTorch's profile: 163.6 µs per 67 M-element copy).
  const Job h200 = load_scenario(kDir / "torch-llama-8b.json");
  const OpContext ch = op_context(h200.layout, h200.training, h200.cluster.gpu);
  const std::vector<LayerOp> h200_ops = layer_ops(h200.model, 0, ch);
  const LayerOp& kv = find_op(h200_ops, "K/V repeat");
  CHECK(op_time(kv, 0, h200.cluster.gpu, h200.training).seconds == doctest::Approx(kv.elements / 3.4e11).epsilon(1e-9));
  CHECK(kv.elements / 3.4e11 / 2 == doctest::Approx(163.6e-6).epsilon(0.2));  // each of its two copies
  // Megatron-Core's fused kernels run no such path.
  const Job megatron = scenario("published/simumax-b200-llama3-70b-tp8-ep1-pp1-mbc4.json");
  for (const LayerOp& o : layer_ops(megatron.model, 0, op_context(megatron.layout, megatron.training, megatron.cluster.gpu)))
    CHECK(o.unvectorized[0].empty());
}

TEST_CASE("compiled, torchtitan's RoPE keeps its eager traffic: Inductor leaves the complex multiply to aten") {
  const Job eager = load_scenario(kDir / "torch-llama-8b.json"), compiled = load_scenario(kDir / "torch-llama-8b.json", {"training.compile=true"});
  REQUIRE(compiled.training.eager() != nullptr);
  CHECK_FALSE(compiled.training.eager()->attention_norm.has_value());
  const auto rope = [](const Job& j) {
    return find_op(layer_ops(j.model, 0, op_context(j.layout, j.training, j.cluster.gpu)), "RoPE");
  };
  const double T = 2 * 8192, q = 4096, kv = 1024;
  CHECK(rope(compiled).bytes[0] == doctest::Approx(T * (q + kv) * 20));
  CHECK(rope(compiled).bytes[1] == doctest::Approx(T * (q + kv) * 20));
  CHECK(rope(compiled).unvectorized[0].empty());  // Inductor's own casts are vectorized
  CHECK(rope(eager).unvectorized[0] == std::vector<double>{6});
}

TEST_CASE("autograd's first gradient accumulation is free: torchtitan adds for all micro-batches but the first") {
  // 8B FSDP8: one micro-batch a step, so no accumulation kernel; with four, three adds in four.
  const Job one = scenario("published/torchtitan-h100-8b-fsdp8-sac.json");
  const Job four = scenario("published/torchtitan-h100-8b-fsdp8-sac.json", {"training.global_batch=64"});
  REQUIRE(one.microbatches() == 1);
  REQUIRE(four.microbatches() == 4);
  CHECK(op_context(one.layout, one.training, one.cluster.gpu).grad_accumulation_bytes == 0);
  // bf16 gradient read, fp32 accumulator read and written: 2 + 2·4 bytes per weight, × 3/4.
  CHECK(op_context(four.layout, four.training, four.cluster.gpu).grad_accumulation_bytes == doctest::Approx(10.0 * 3 / 4));
  // Megatron-LM 2021's main_grad buffer adds on every micro-batch.
  const Job megatron = scenario("gpt3-175b-megatron.json");
  CHECK(op_context(megatron.layout, megatron.training, megatron.cluster.gpu).grad_accumulation_bytes == doctest::Approx(2.0 + 2.0 * megatron.training.optimizer.grads));
}
