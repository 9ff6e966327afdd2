#pragma once
// A SimuMax system config (MooreThreads/SimuMax configs/system/*.json, written by its
// simu_tools/efficency_test on the machine it describes) read as plumb GEMM measurements: each row of
// accelerator.op.matmul.accurate_efficient_factor (Transformer Engine general_gemm, one shape and
// layout) and of group_matmul's (grouped expert GEMMs) becomes a GEMM of plumb's (m, n, k) per pass,
// its time the row's FLOPs over its efficiency × the section's "tflops". SimuMax times 75 calls back
// to back after 25 warm-up (test_gemm_efficiency.py, test_steps 100, warmup_steps 25), so the rates
// are sustained ones. What is not GEMMs (attention, memory bandwidth, networks) is listed, not read.
#include <string>

#include "validate/calibrate/calibrate.hpp"

namespace plumb {

// Whether `doc` is a SimuMax system config (it has "sys_name" and accelerator.op).
bool is_simumax_system(const Json& doc);
// Its GEMM rows as measurements; a malformed row is an InputError naming its JSON path.
Measurements read_simumax_system(const Json& doc, const std::string& file);

}  // namespace plumb
