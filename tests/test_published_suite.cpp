// The published suite (scenarios/published/): every case reads and simulates, and the errors per
// publication stay inside the bounds below — a regression guard, set at what the model reaches today
// (docs/fidelity.md has the table). Loosening a bound needs a reason in the commit; tightening one is
// the point of the work. The torchtitan and SimuMax time rows are far off today (terms missing, see
// docs/fidelity.md); their bounds only stop them getting worse.
#include <doctest/doctest.h>
#include <map>
#include <string>

#include "validate/published/suite.hpp"

using namespace plumb;

TEST_CASE("published suite: every case reads and names its framework, source and assumptions") {
  std::size_t cases = 0;
  std::map<std::string, int> groups;
  for (const auto& f : case_files({published_dir().string()})) {
    PublishedCase c = read_case(f);
    INFO(c.id);
    CHECK_FALSE(c.job.framework.id.empty());
    CHECK_FALSE(c.source.empty());
    CHECK_FALSE(c.assumptions.empty());
    CHECK_FALSE(c.measured.empty());
    ++groups[c.group];
    ++cases;
  }
  CHECK(cases >= 197);
  CHECK(groups.size() >= 12);
}

// One test case, so the suite is simulated once per test run (ctest runs each case in its own process).
TEST_CASE("published suite: every case simulates, and the errors per publication stay inside their bounds") {
  std::vector<PublishedCase> cases;
  for (const auto& f : case_files({published_dir().string()})) cases.push_back(read_case(f));
  const SuiteResult suite = run_suite(cases);
  for (const CaseResult& c : suite.cases) {
    INFO(c.id << ": " << c.failure);
    CHECK(c.failure.empty());
  }
  auto summary = [&](const std::string& group, bool memory) {
    for (const ErrorSummary& s : suite.summaries)
      if (s.group == group && s.memory == memory) return s;
    FAIL("no summary for " << group << (memory ? " memory" : " time"));
    return ErrorSummary{};
  };
  struct Bound {
    const char* group;
    bool memory;
    double mape, max;
  };
  // Today: SC'21 4.0% / 8.4%, Korthikanti 3.5% / 6.8%, DeepSeek-V3 14.2%, SimuMax memory 2.5% / 4.1%;
  // SimuMax time 37.5% / 45.2%, torchtitan 21.3% / 58.4%, torchtitan async TP 26.3% / 58.8%; torchtitan
  // memory 18.4% / 34.4% (it measured the allocator's reserved bytes). Session 20 moved SimuMax from
  // 40.9% (the B200's HBM efficiency and FlashAttention-4's rates by sequence), torchtitan from 22.8% to
  // 19.0% (its eager elementwise kernels) and async TP from 24.8% to 22.2% (torchao's float8 casts); then
  // tensorwise float8's fp8 all-gathers, right by torchtitan's code, made the TP rows faster still (20.3%,
  // 23.8%): time is missing elsewhere in their TP path. Session 21 read torchtitan's selective AC under
  // float8 from the code (the policy, a dispatch mode, sees torchao's aten.mm before the Float8Tensor
  // turns it into _scaled_mm): float8 saves every second matmul as bf16 does, so the float8 rows recompute
  // less — memory 22.1% / 48.0% to 18.4% / 34.4%, and time faster still, torchtitan 21.3% / 58.4% and async
  // TP 26.3% / 58.8% (the term missing from torchtitan's 8B rows is common to bf16 and float8).
  // Session 22, memory: a recomputed layer's backward (its dropped tensors alive again at once), 17.8% /
  // 32.6%; FSDP's fp32 reduce-scatter buffers, 17.0% / 31.2% (the 405B rows only; the others peak at the
  // loss); torchtitan's vocabulary-parallel loss under TP (16 bytes at its backward against
  // F.cross_entropy's 12), 15.8% / 30.7%. Time: the simulator's makespan stopped counting stale
  // completion events (an SM-sharing task that sped up left its first, later completion queued, and
  // popping it moved the clock); FSDP's per-pass collectives hold SMs, so the 8B FSDP rows had been
  // stretched 10–13% by time that never ran — torchtitan 21.3% → 26.5% (max 58.8%): the miss was hidden.
  // FSDP2's unpacking of each gather on the compute stream then gave 25.7% (max 58.6%); its copy of each
  // backward's gradients into the fp32 reduce-scatter input, 25.1% (max 58.5%). Session 25: under PP,
  // FSDP2 accumulates the whole gradients in fp32 between micro-batches — the 405B rows' memory, torchtitan
  // memory 15.8% / 30.7% → 10.8% / 20.3%, and its passes, time 24.8%; FSDP2's root unit kept gathered
  // and w2's output cached by eager SAC only (not compiled), 10.5% / 19.6%; the collectives' stream pools,
  // 8.8% / 18.5%; DTensor keeping the head's gathered input, 8.3% / 16.1%. Session 26: the root unit's
  // buffers in those pools, 4.0% / 14.3% (every 8B row within 2.6%); the last pipeline stage keeping
  // every micro-batch's logits, 4.3% / 14.3% (the interleaved 405B row +2.9% → +10.7%). Session 27: async
  // TP priced (it had been plain TP), its copies on the copy engines beside the matmuls: the rows that ran
  // it got faster, torchtitan 24.8% → 29.3% (max 59.4%) and async TP 26.0% → 33.2% — its float8 speedups
  // are within 0.05 of the measured, its bf16 ones over, and the vanilla rows it builds on are too fast
  // already (the term is right by PyTorch's code; the miss is in what it rests on). Megatron-Core's
  // optimizer step passes over the gradient buffer and shard: SimuMax time 37.5% / 45.2% → 36.3% / 43.1%.
  // Session 28, from torchtitan's own step measured on an H200 (tests/test_torch_llama_h200.cpp): PyTorch's
  // unvectorized elementwise kernels, RoPE and the loss under compile, the loss's log-softmax passes —
  // torchtitan 29.3% → 27.2%, async TP 33.2% → 31.0% — and FlashAttention-2 at the rates a training step
  // sustains (not the benchmark's): torchtitan 16.5% / 34.7%, async TP 26.3% / 49.7%. When the suite was
  // first written: SimuMax 48.2%, torchtitan 88.3%, async TP 64.3%, torchtitan memory 41.5%.
  // Session 29: every job at the pace of its slowest chip (chip_spread, 1.71% from the V100 SGEMM
  // measurement of Sinha et al., SC'22): torchtitan 16.5% → 13.2%, async TP 26.3% → 22.9%, DeepSeek-V3
  // −14.2% → −10.5%, SC'21 4.0% / 8.4% → 2.7% / 5.9%, SimuMax 36.3% → 35.0%; Korthikanti 3.5% / 6.8% →
  // 4.3% / 9.5% (its 1T rows on 512 GPUs, whose larger GEMMs the A100's one efficiency does not reward);
  // torchtitan's foreach AdamW passes (December 2024): torchtitan 13.2% → 13.0%.
  // Session 30: torchtitan's separate wq, wk, wv and w1, w3 linears, each its own GEMM and, under
  // float8, its own cast of the input: torchtitan 13.0% / 28.0% → 12.4% / 27.7%, async TP 22.9% / 46.8%
  // → 17.5% / 33.2% (the rowwise rows, whose wk and wv casts torchtitan PR #1319 measured); the sums of
  // their input gradients, a kernel before TP's reduce-scatter: torchtitan 11.7% / 27.2%, async TP 14.7% /
  // 28.8% (14.6% / 28.7% with the rerun wk and w3 at their own GEMMs' time). Ring attention's merges as
  // PyTorch and Transformer Engine run them (parallel.cp_merge): torchtitan 11.7% / 27.2% → 11.4% / 25.5%,
  // SimuMax 35.0% → 34.9%.
  // Session 31: Megatron-Core's attention as Transformer Engine runs it, cuDNN's kernel at cudnn-frontend's
  // B200 rates, and the CP rows' all-to-all (TE's a2a, one kernel over every key): SimuMax 34.9% / 42.0% →
  // 32.3% / 40.4%; B200 NVLink and NVLS at the rates nccl-tests measured on B200 nodes: 31.8% / 39.4%.
  // torchtitan's 8B on 32 and 64 H200 (Trainy, June 2025), added unseen: +4.0% and +5.4%, memory +2.6% and
  // +0.1%. PyTorch's context parallelism as it ran, K and V all-gathered beside the first block
  // (parallel.cp_comm "all_gather"): torchtitan 11.4% / 25.5% → 10.8% / 25.0% (405B CP8 +25.5% → +17.8%).
  // Session 32: Megatron-LM's GPT 6.9B on 8 and 16 B200 at MGHPCC and MIT ORCD (logs of 2026), added
  // unseen: −19.7% to −21.6% in time, −1.0% in memory. B200 GEMMs at the clock a matmul settles to at the
  // power limit (ml-engineering's MSMF, 0.762 of the burst model), attention at FlashAttention-4's own
  // (0.853): SimuMax 31.8% / 39.4% → 26.5% / 34.9%, the GPT 6.9B rows 20.6% → 13.0%. torchao's B200
  // table at 750 W (cluster.power_limit), added unseen with torchtitan's cuDNN attention on B200 (recomputed:
  // per-op SAC does not save it): +86% to +132% in tokens/s, +35% in memory, the largest misses of the
  // suite, left for their terms to be found (docs/fidelity.md).
  // Session 33: the Zero Bubble paper's A100 runs (Qi et al., ICLR 2024: GPT 1.5B-28.3B on 8-32 A100, pure
  // pipeline, Megatron-LM's 1F1B and the paper's ZB-1p), added unseen: 8.3% / 13.7% in time (every row fast),
  // 8.6% / 15.5% in memory (every row low; ZB-1p's rows 1-3 GB above 1F1B's measured, the same in plumb).
  // The paper's ZB-1p and ZB-2p as its runtime makes them (schedules zb-1p, zb-2p: p and 2p activation sets
  // on every rank, each deferred W's stash of GEMM inputs and output gradients counted, 32sbh a layer), and
  // the stash in the memory model and the step: the ZB-1p rows +2.2..+11.2% → -1.9..+11.3% in time,
  // -5.2..-15.5% → -4.7..-6.2% in memory; ZB-2p's 12 rows added: -0.9..+10.6%, -1.5..-6.7%. Group 6.6% /
  // 13.7% in time, 5.8% / 11.3% in memory (the 1F1B rows: 5.0..13.7% fast, 3.1..11.3% low). Then the paper's
  // Table 6, unseen (ZB-V, ZB-2p*, ZB-1p and 1F1B on 16-32 A100 at larger micro-batches, 36 rows): 3.8% / 9.0%
  // in time, 3.5% / 5.5% in memory. And Table 4's 1F1B-I rows (Megatron's interleaved schedule, a layer a
  // chunk), unseen: +10.8..+20.9% in tokens/s, -7.2..-9.4% in memory (plumb misses what a chunk's sends
  // cost). Group: 93 cases, 6.7% / 20.9% and 5.2% / 11.3%. ZB-1p and ZB-2p then placed as the paper's
  // runtime places them (its Table 5 bubble rates to 0.001 on all twelve setups): every schedule's rows now
  // fast by about the same (ZB-1p -0.6..+16.4%, ZB-2p -1.7..+10.7%, 1F1B -1.3..+13.7%): 7.2% / 20.9% and
  // 5.8% / 11.3%. Table 7's half-micro-batch rows (9, unseen, no memory): -0.5..+11.4%, plumb's gain from
  // doubling the micro-batch smaller than measured (a cost per op that does not grow with it). Group: 102
  // cases, 7.2% / 20.9% and 5.8% / 11.3%. The materialised attention's two score tensors at the forward's
  // peak (baddbmm's buffer and output): memory 5.0% / 9.1%, 43 rows beyond 5% (58 before). ZB-V placed as
  // the runtime places it (Table 8's bubble rates): its Table 6 rows -0.2..-3.2% (were -1.0..-6.3%), its
  // Table 7 rows +1.9..+6.2% (were -0.5..+3.4%); time 7.0% / 20.9%.
  // Session 35: the clock at a lower power limit follows the power above the idle draw to a measured
  // exponent (B200 0.80: cuBLAS at 750 W), not its cube root: torchao's rows 106.2% / 131.5% → 80.9% / 104.6%.
  // Their torchtitan (6fc499f) splits FSDP2's units outside the blocks (torchtitan-2025-08: the head kept
  // gathered to its backward, the embedding resharded): memory 35.3% / 36.3% → 23.6% / 24.6%. DeepSeek's
  // framework issues its kernels at the pace its own trace shows (86.9 µs a plumb kernel): -10.5% → -10.2%.
  // Session 36: the 500 W H100's clocks at ((500 - 70) / (700 - 70))^0.53 = 0.817 of 700 W (Hopper's exponent
  // measured as the B200's: cuBLAS at 500 W), not the ViT clock's 0.879: torchtitan 10.8% / 25.0% → 7.1% /
  // 16.4%, async TP 14.6% / 28.7% → 11.4% / 24.5%.
  // Session 37: FSDP2 keeps no bf16 shard beside its fp32 one (optimizer.params_are_master): every torchtitan
  // row's memory falls by 2 bytes a parameter over its shard (torchtitan memory 4.3% / 14.3% → 5.6% / 15.4%,
  // the 8B rows now -0.6% to -4.5%; torchao 23.6% / 24.6% → 16.2% / 17.3%). Per-op SAC keeps no output of an
  // SDPA op outside its save list (cuDNN's, on the B200): torchao → 12.3% / 13.2%. Fused attention that drops
  // out its probabilities at FA4's measured sm_100 dropout rates (0.80 / 0.65 of its own): GPT 6.9B 13.0% /
  // 14.0% → 8.1% / 9.2%. torchtitan PR #1196's two B200 rows (eager, FA2 then cuDNN, 8B FSDP8 at Meta's 750 W),
  // added unseen: -12.8% and -1.2% in tokens/s, +12.6% in memory (both). torchao's float8 H100 table (2025-03:
  // 8B FSDP8 at batch 1, compiled, bf16 / tensorwise / rowwise; framework torchtitan-2025-03), added unseen:
  // +14.4%, +3.5%, +11.3% in tokens/s, +5.4%, +3.9%, +3.9% in memory. The GPT 6.9B series on 1, 2 and 4 GPUs
  // of one MGHPCC node (the 8- and 16-GPU rows' own series), added unseen: -6.0%, -7.1%, -7.4% (measured 1 → 8
  // GPUs +4.6%, plumb +3.0%).
  // Session 38: torchao's fp8 weight gathers under FSDP2 (parallel.fp8_weight_gathers, the ten rows whose
  // configs enable them) and torchao's recipes holding no fp8 weight copy (two bytes a gathered weight, not
  // three): torchao H100 tensorwise +3.5% → +7.2% in tokens/s, +3.9% → +1.8% in memory; torchao B200 memory
  // 12.3% → 10.8%; H200 4.7% / 5.4% → 6.3% / 7.0% in time. The 405B rows kept gathered under PP had matched
  // for a wrong reason (their stage's weights counted at three bytes each, one as run): memory 5.6% / 15.4%
  // → 10.0% / 28.2%, what they hold beyond plumb's terms not found yet (docs/fidelity.md).
  // Session 39: SimuMax's rows at their node's settled clock (b200-simumax-node: plumb calibrate --clock on the
  // node's own GEMM table, 0.803 of b200's settled rate at every long GEMM): 26.5% / 34.9% → 12.0% / 23.8%.
  // Transformer Engine's grouped GEMM as it runs, one cuBLAS GEMM an expert on 4 streams
  // (training.grouped_gemm_streams): the MoE rows 1-3 points slower, SimuMax 12.0% → 11.2%.
  // The backward's TP traffic beside its GEMMs as Megatron-LM (2022 on) and Transformer Engine run it
  // (parallel.tp_backward_overlap: the saved shard gathered again beside the input gradient, its
  // reduce-scatter beside the weight gradient): the TP rows 0.5-3 points faster, SimuMax 11.2% / 23.8% →
  // 11.8% / 26.7% (its TP8 rows were nearer for exposing a reduce-scatter that runs hidden), Korthikanti
  // 4.3% / 9.5% → 4.7% / 8.9%.
  // Session 40: the Zero Bubble cluster's pipeline exchange as its paper measured it (Table 9's T_comm, fabric
  // zero-bubble-a100-roce's pipeline_send, 237 us + bytes / 71.8 GB/s under every hop): its single-node rows
  // 0.4-3.5 points slower, time 7.0% / 20.9% → 6.6% / 18.3%; ZB-1p and ZB-2p place their W's on the longer
  // sends, memory 5.0% / 9.1% → 5.1% / 9.8%.
  const Bound bounds[] = {{"sc21-table1", false, 0.04, 0.07},           {"korthikanti-2022", false, 0.05, 0.10},
                          {"deepseek-v3", false, 0.105, 0.105},          {"simumax-b200", true, 0.03, 0.05},
                          {"simumax-b200", false, 0.119, 0.27},          {"torchtitan-h100-2024-12", false, 0.075, 0.17},
                          {"torchtitan-asynctp-h100-2025-06", false, 0.12, 0.25},
                          {"torchtitan-h100-2024-12", true, 0.101, 0.285},
                          {"torchtitan-h200-2025-06", false, 0.064, 0.071},
                          {"torchtitan-h200-2025-06", true, 0.02, 0.029},
                          {"megatron-b200-2026", false, 0.08, 0.095},
                          {"megatron-b200-2026", true, 0.015, 0.015},
                          {"torchao-b200-750w-2025-08", false, 0.827, 1.05},
                          {"torchtitan-b200-2025-05", false, 0.071, 0.13},
                          {"torchao-h100-2025-03", false, 0.11, 0.145},
                          {"torchao-h100-2025-03", true, 0.035, 0.055},
                          {"torchtitan-b200-2025-05", true, 0.127, 0.127},
                          {"torchao-b200-750w-2025-08", true, 0.109, 0.116},
                          {"zero-bubble-a100-2024", false, 0.067, 0.19},
                          {"zero-bubble-a100-2024", true, 0.052, 0.10}};
  for (const Bound& b : bounds) {
    const ErrorSummary s = summary(b.group, b.memory);
    // One string: doctest's INFO captures its operands lazily, and printed a literal's address.
    const std::string context = std::string(b.group) + (b.memory ? " memory" : " time") + ": MAPE " + std::to_string(100 * s.mape) +
                                "%, max " + std::to_string(100 * s.max) + "% (" + s.worst_case + ")";
    INFO(context);
    CHECK(s.mape <= b.mape);
    CHECK(s.max <= b.max);
  }
  // The sign convention, on the SC'21 1008B row: 163 TFLOP/s measured, plumb below it (docs/fidelity.md),
  // so the error is negative and equals predicted/measured − 1.
  bool found = false;
  for (const CaseResult& c : suite.cases)
    if (c.id == "sc21-table1-1008b") {
      found = true;
      REQUIRE(c.metrics.size() == 1);
      CHECK(c.metrics[0].measured == doctest::Approx(163e12));
      CHECK(c.metrics[0].error() < 0);
      CHECK(c.metrics[0].error() == doctest::Approx(c.metrics[0].predicted / 163e12 - 1));
    }
  CHECK(found);
}
