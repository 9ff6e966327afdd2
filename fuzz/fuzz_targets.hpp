#pragma once
// One entry per reader plumb has, each taking the raw bytes of a file as a user or another program
// might hand it over. Clean refusals (InputError, a bad schedule or usage, a limit) are the expected
// outcome of bad bytes; anything else escapes, and libFuzzer (make fuzz) or the regression replay in
// make test reports it. The same functions are the libFuzzer targets and the replay's.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace plumb::fuzz {

using Target = void (*)(const std::uint8_t* data, std::size_t size);

// Each target's seed corpus (repository paths) is in fuzz/targets.txt, read by make fuzz and the replay.
struct TargetInfo {
  std::string name;  // fuzz_<name>, tests/fuzz_regressions/<name>/, fuzz/dicts/<name>.dict
  Target run;
};

// Scenario files, and after a NUL byte newline-separated --set overrides; a scenario that loads is
// also priced, and simulated where its step is small.
void scenario(const std::uint8_t* data, std::size_t size);
void model_preset(const std::uint8_t* data, std::size_t size);
void hf_config(const std::uint8_t* data, std::size_t size);
void gpu_profile(const std::uint8_t* data, std::size_t size);
void fabric_profile(const std::uint8_t* data, std::size_t size);
void nccl_tests_log(const std::uint8_t* data, std::size_t size);
// A plumb validate --csv file, as --baseline reads it.
void suite_csv(const std::uint8_t* data, std::size_t size);
void measurements(const std::uint8_t* data, std::size_t size);
void measured_run(const std::uint8_t* data, std::size_t size);
// A PyTorch profiler trace (plain; gzip goes through the same reader), read and summarised.
void profiler_trace(const std::uint8_t* data, std::size_t size);
// A Megatron-LM or torchtitan training log, read and turned into measurements.
void training_log(const std::uint8_t* data, std::size_t size);
// A launch configuration: the same bytes as a Megatron-LM launch and as a torchtitan TOML config.
void launch_config(const std::uint8_t* data, std::size_t size);

const std::vector<TargetInfo>& targets();

}  // namespace plumb::fuzz
