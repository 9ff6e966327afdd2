#include "sim/limits.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fstream>
#include <unistd.h>

namespace plumb::sim {

namespace {

// A control group's memory limit in bytes (v2 memory.max, else v1 memory.limit_in_bytes); 0 for none.
double cgroup_limit() {
  for (const char* file : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(file);
    double limit = 0;
    if (in >> limit && limit > 0) return limit;  // "max" (no limit) does not parse as a number
  }
  return 0;
}

}  // namespace

double memory_available_bytes() {
  static const double available = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    const double physical = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
    const double group = cgroup_limit();
    if (physical <= 0) return group;
    return group > 0 ? std::min(physical, group) : physical;
  }();  // read once: every simulated step checks against it
  return available;
}

void check_memory_estimate(double bytes, const std::string& what, const std::string& fix) {
  const double available = memory_available_bytes();
  if (available <= 0 || bytes <= 0.75 * available) return;
  throw LimitError(fmt::format("{} would take about {:.1f} GiB, more than the {:.1f} GiB plumb allows itself here (three quarters of "
                               "this machine's {:.1f} GiB): {}",
                               what, bytes / (1 << 30), 0.75 * available / (1 << 30), available / (1 << 30), fix));
}

}  // namespace plumb::sim
