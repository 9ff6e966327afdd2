#pragma once
// What one simulation may take: the clock's range and this machine's memory. Inputs that ask for
// more are refused up front with the estimate and the limit; commands report LimitError as bad
// input (exit 2), naming the file.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace plumb::sim {

struct LimitError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Bytes this process may use: the machine's physical memory, or its control group's limit where that
// is lower (a container); 0 when neither can be read.
double memory_available_bytes();

// Refuses (LimitError) a task graph estimated at `bytes`, beyond three quarters of
// memory_available_bytes(); `what` says what holds it and `fix` how to make it smaller.
void check_memory_estimate(double bytes, const std::string& what, const std::string& fix);

}  // namespace plumb::sim
