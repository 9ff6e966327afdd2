#pragma once
// Progress of a long command on the terminal: a bar redrawn in place on stderr when stderr is a terminal,
// nothing at all when it is piped or redirected (so logs and --json output stay clean).
#include <cstdint>
#include <functional>
#include <string>

namespace plumb::cli {

// A callback for library code that reports (done, total): "plumb plan [########----------]  42.0% of
// 13824 layouts", finished with a newline when done reaches total. Empty when stderr is not a terminal.
std::function<void(std::uint64_t done, std::uint64_t total)> progress_bar(std::string label, std::string unit);

}  // namespace plumb::cli
