// Megatron-LM's published runs on Selene's A100-80GB nodes against plumb's prediction of each: the
// layer times and iteration times of Korthikanti et al. 2022 and the throughputs of SC'21 Table 1.
// The A100 profile's GEMM efficiency was read off one of these numbers (Table 4's 22B forward); the
// others were not fitted to.
#include <doctest/doctest.h>
#include <cmath>
#include <fmt/format.h>

#include "models/input/catalogue.hpp"
#include "models/step/step_estimate.hpp"

using namespace plumb;

namespace {

struct Megatron {
  std::string model;
  std::int64_t tp, pp, vp, gpus, batch, micro_batch;
  std::string recompute = "full";
  bool sequence_parallel = false;
  // SC'21 (Megatron-LM of 2021) added each micro-batch's weight gradients to the accumulated ones by
  // a separate kernel; Korthikanti et al. 2022 ran Megatron-LM 3.0, whose linear layers accumulate in
  // the weight-gradient GEMM (gradient_accumulation_fusion, beside its sequence parallelism).
  std::string grad_accumulation = "separate";
};

// The SC'21 scenario (Megatron-LM as it ran on Selene: unfused attention with dropout, blocking
// pipeline sends, gradients all-reduced after the backward, no distributed optimizer) set to `m`.
Job megatron_job(const Megatron& m) {
  return load_scenario(data_dir() / "scenarios" / "gpt3-175b-megatron.json",
                       {"model=" + m.model, fmt::format("cluster.nodes={}", m.gpus / 8), fmt::format("parallel.tp={}", m.tp),
                        fmt::format("parallel.pp={}", m.pp), fmt::format("parallel.dp={}", m.gpus / (m.tp * m.pp)),
                        fmt::format("parallel.vp={}", m.vp),
                        std::string("parallel.schedule=") + (m.vp > 1 ? "interleaved" : "1f1b"),
                        fmt::format("parallel.micro_batch={}", m.micro_batch), fmt::format("training.global_batch={}", m.batch),
                        "parallel.recompute=" + m.recompute, "training.grad_accumulation=" + m.grad_accumulation,
                        fmt::format("parallel.sequence_parallel={}", m.sequence_parallel ? "true" : "false")});
}

double step_seconds(const Job& job) { return estimate_step(job.layout, job.microbatches(), step_costs(job)).step_time; }

}  // namespace

TEST_CASE("Korthikanti et al. 2022 Table 4: one layer of the 22B model, forward and backward") {
  // arXiv 2205.05198 Table 4 (Selene A100-80GB, TP8, micro-batch 4, sequence 2048): milliseconds per
  // layer, the backward with its recomputation. The first forward is the figure the A100 profile's
  // GEMM efficiency was derived from, so it must come back; the other nine were not fitted to. What
  // plumb leaves out (the paper overlaps each input-gradient all-reduce with its weight-gradient
  // GEMM, plumb runs them in turn) makes the backward without sequence parallelism a few per cent slow.
  struct Row {
    const char* what;
    const char* recompute;
    bool sp;
    double forward_ms, backward_ms;
  };
  const Row rows[] = {{"baseline, no recompute", "none", false, 7.7, 11.9},
                      {"sequence parallelism", "none", true, 7.2, 11.8},
                      {"baseline with recompute", "full", false, 7.7, 19.5},
                      {"selective recompute", "selective", false, 7.7, 13.2},
                      {"selective + sequence", "selective", true, 7.2, 13.1}};
  for (const Row& row : rows) {
    Job job = megatron_job({"megatron-22b", 8, 1, 1, 8, 4, 4, row.recompute, row.sp, "fused"});
    LayerTimes t = layer_times(job, 0);
    INFO(row.what << ": forward " << t.forward * 1e3 << " ms, backward " << t.backward * 1e3 << " ms");
    CHECK(std::abs(t.forward * 1e3 / row.forward_ms - 1) < (row.sp ? 0.06 : 0.01));
    CHECK(std::abs(t.backward * 1e3 / row.backward_ms - 1) < 0.06);
  }
}

TEST_CASE("Korthikanti et al. 2022 Table 5: iteration times from 22B to 1T parameters") {
  // arXiv 2205.05198 Tables 3 and 5: no data parallelism, interleaved with 3 chunks per rank for 175B and
  // 530B; "full recompute" without sequence parallelism against "present work" (sequence parallelism and
  // selective recomputation), in seconds per iteration; §6.3 adds the 530B model at 8-way data
  // parallelism (2240 GPUs, batch 2240): 39.15 s. Within 10%: the 1T rows on 512 GPUs are +9% since each
  // job runs at the pace of its slowest chip (chip_spread; +6–7% before), the A100's one GEMM efficiency,
  // read off the 22B layer (h 6144), leaving the 1T's larger GEMMs (h 25600) as slow as the 22B's.
  struct Row {
    Megatron layout;
    double full_s, present_s;
  };
  const Row rows[] = {{{"megatron-22b", 8, 1, 1, 8, 4, 4}, 1.42, 1.10},
                      {{"gpt3-175b", 8, 8, 3, 64, 64, 1}, 18.13, 13.75},
                      {{"megatron-529.6b", 8, 35, 3, 280, 280, 1}, 49.05, 37.83},
                      {{"megatron-1008b", 8, 64, 1, 512, 512, 1}, 94.42, 71.49},
                      {{"megatron-529.6b", 8, 35, 3, 2240, 2240, 1}, 0, 39.15}};
  for (const Row& row : rows) {
    Megatron full = row.layout, present = row.layout;
    full.grad_accumulation = present.grad_accumulation = "fused";
    present.recompute = "selective";
    present.sequence_parallel = true;
    INFO(row.layout.model << " on " << row.layout.gpus << " GPUs");
    if (row.full_s > 0) {
      double t = step_seconds(megatron_job(full));
      INFO("full recompute: " << t << " s against " << row.full_s);
      CHECK(std::abs(t / row.full_s - 1) < 0.10);
    }
    double t = step_seconds(megatron_job(present));
    INFO("present work: " << t << " s against " << row.present_s);
    CHECK(std::abs(t / row.present_s - 1) < 0.10);
  }
}

TEST_CASE("Megatron SC'21 Table 1: every row's TFLOP/s per GPU") {
  // Eq. 3 FLOPs per iteration over (step time × GPUs) against the published TFLOP/s per GPU, within the
  // ±10% the issue asks for: −2.8% to +7.7% (the analytic estimate; README "Fidelity" has plumb run's).
  // Without the separate gradient-accumulation kernel of 2021's Megatron-LM every row erred on the
  // optimistic side, +1.5% to +10.2% (RMS 5.8%); it costs most where micro-batches are smallest.
  struct Row {
    Megatron layout;
    double published;
  };
  const Row rows[] = {{{"megatron-1.7b", 1, 1, 1, 32, 512, 16}, 137},
                      {{"megatron-3.6b", 2, 1, 1, 64, 512, 16}, 138},
                      {{"megatron-7.5b", 4, 1, 1, 128, 512, 16}, 142},
                      {{"megatron-18.4b", 8, 1, 1, 256, 1024, 8}, 135},
                      {{"megatron-39.1b", 8, 2, 1, 512, 1536, 4}, 138},
                      {{"megatron-76.1b", 8, 4, 3, 1024, 1792, 2}, 140},
                      {{"megatron-145.6b", 8, 8, 2, 1536, 2304, 2}, 148},
                      {{"megatron-310.1b", 8, 16, 2, 1920, 2160, 1}, 155},
                      {{"megatron-529.6b", 8, 35, 3, 2520, 2520, 1}, 163},
                      {{"megatron-1008b", 8, 64, 1, 3072, 3072, 1}, 163}};
  double sum = 0, squares = 0;
  for (const Row& row : rows) {
    Job job = megatron_job(row.layout);
    double t = step_seconds(job);
    double B = static_cast<double>(row.layout.batch), s = 2048, l = static_cast<double>(job.model.layers);
    double h = static_cast<double>(job.model.hidden);
    double eq3 = 96 * B * s * l * h * h * (1 + s / (6 * h) + 51200 / (16 * l * h));
    double err = eq3 / (t * static_cast<double>(row.layout.gpus)) / 1e12 / row.published - 1;
    INFO(row.layout.model << ": " << 100 * err << "%");
    CHECK(std::abs(err) < 0.10);
    sum += err;
    squares += err * err;
  }
  const double n = static_cast<double>(std::size(rows));
  INFO("mean " << 100 * sum / n << "%, RMS " << 100 * std::sqrt(squares / n) << "%");
  CHECK(std::abs(sum / n) < 0.05);
  CHECK(std::sqrt(squares / n) < 0.05);
}
