// A libFuzzer target: PLUMB_FUZZ_TARGET names the reader (one of fuzz_targets.hpp's entries).
#include "fuzz/fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  plumb::fuzz::PLUMB_FUZZ_TARGET(data, size);
  return 0;
}
