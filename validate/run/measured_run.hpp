#pragma once
// What a single-GPU validation run measured (`plumb-validate run` writes it, `plumb compare` reads
// it): each timed step's length, the median step's timeline per pipeline rank, and the median time
// of each plumb op per pass. Its file carries the device, driver, date and the run's setup.
#include <string>
#include <vector>

#include "models/input/json_reader.hpp"
#include "validate/run/virtual_run.hpp"

namespace plumb {

struct MeasuredOp {
  std::int32_t rank = 0, index = 0;  // the op's place in the rank's schedule
  double start = 0, end = 0;         // seconds from the step's start
};

// A span of one rank's step that is not a schedule op: its gradient all-reduce over the replicas.
struct MeasuredSpan {
  std::int32_t rank = 0;
  double start = 0, end = 0;  // seconds from the step's start
};

// A pass's name in the measured-run file and in plumb compare's JSON: forward, input_grad, weight_grad.
std::string_view pass_key(int pass);

struct MeasuredOpTime {
  std::string op;     // "stage 2 · q up-projection"
  int pass = 0;       // 0 forward, 1 input gradient, 2 weight gradient
  double seconds = 0; // median over its runs
  std::int64_t runs = 0;
};

struct MeasuredRun {
  std::vector<double> step_seconds;  // every timed step
  std::vector<MeasuredOp> timeline;  // the median step
  std::vector<MeasuredOpTime> op_times;
  std::vector<int> sms;              // per rank, as the driver split them
  std::vector<MeasuredSpan> gradient_reductions;  // the median step's, per rank (data-parallel runs)
  double median_step() const;
};

struct MeasuredSetup {
  std::string scenario;               // as the user named it
  std::vector<std::string> overrides; // --set
  VirtualRunOptions options;
  std::string device, driver, date;
  int clock_mhz = 0;
};

Json measured_run_json(const MeasuredSetup& setup, const VirtualRun& run, const MeasuredRun& measured);

// The median step's timeline as a Chrome trace (Perfetto, chrome://tracing): a process per pipeline
// rank, one slice per schedule op.
Json measured_trace_json(const VirtualRun& run, const MeasuredRun& measured);

struct MeasuredFile {
  std::string file;  // where it was read from
  MeasuredSetup setup;
  MeasuredRun run;
};
// Throws InputError naming the file and the JSON path of what is wrong.
MeasuredFile read_measured_run(const std::string& path);

}  // namespace plumb
