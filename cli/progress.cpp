#include "cli/progress.hpp"

#include <cstdio>
#include <fmt/format.h>
#include <string>
#include <unistd.h>

namespace plumb::cli {

namespace {
constexpr int kBarWidth = 30;
}

std::function<void(std::uint64_t, std::uint64_t)> progress_bar(std::string label, std::string unit) {
  if (!isatty(STDERR_FILENO)) return {};
  return [label = std::move(label), unit = std::move(unit)](std::uint64_t done, std::uint64_t total) {
    const double share = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
    const int filled = static_cast<int>(share * kBarWidth);
    const std::string bar = std::string(static_cast<std::size_t>(filled), '#') +
                            std::string(static_cast<std::size_t>(kBarWidth - filled), '-');
    fmt::print(stderr, "\r{} [{}] {:5.1f}% of {} {}{}", label, bar, 100.0 * share, total, unit, done >= total ? "\n" : "");
    std::fflush(stderr);
  };
}

}  // namespace plumb::cli
