#include "validate/calibrate/nccl_tests_log.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <set>
#include <sstream>

#include "models/input/diagnostics.hpp"

namespace plumb {
namespace {

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::optional<double> number(const std::string& w) {
  try {
    std::size_t used = 0;
    double v = std::stod(w, &used);
    if (used == w.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

const std::vector<std::pair<std::string, CollectiveOp>>& binaries() {
  static const std::vector<std::pair<std::string, CollectiveOp>> list{
      {"all_reduce", CollectiveOp::all_reduce}, {"reduce_scatter", CollectiveOp::reduce_scatter},
      {"all_gather", CollectiveOp::all_gather}, {"alltoall", CollectiveOp::all_to_all},
      {"broadcast", CollectiveOp::broadcast},   {"sendrecv", CollectiveOp::send_recv}};
  return list;
}

std::optional<CollectiveOp> op_of_binary(const std::string& name) {
  for (const auto& [prefix, op] : binaries())
    if (name.rfind(prefix, 0) == 0) return op;
  return std::nullopt;
}

}  // namespace

// The longest one collective call may take in a log (nccl-tests' largest defaults finish in well under a second).
constexpr double kMaxCollectiveSeconds = 1000;

NcclTestsLog parse_nccl_tests_log(const std::string& text, const std::string& file) {
  NcclTestsLog log;
  log.file = file;
  auto fail = [&](std::size_t line, const std::string& message) {
    throw InputError({Diagnostic{file, fmt::format("line {}", line), message}});
  };
  std::set<std::string> hosts;
  std::optional<CollectiveOp> header_op;
  std::istringstream in(text);
  std::string line;
  std::size_t number_of_line = 0;
  std::string last_redop;
  while (std::getline(in, line)) {
    ++number_of_line;
    std::vector<std::string> w = words(line);
    if (w.empty()) continue;
    if (w[0][0] == '#') {
      // "# Collective test starting: all_reduce_perf"
      auto at = line.find("Collective test starting:");
      if (at != std::string::npos) {
        std::vector<std::string> rest = words(line.substr(at + 25));
        if (!rest.empty()) header_op = op_of_binary(rest[0]);
      }
      // "#  Rank  0 Group  0 Pid 313 on HOST device  0 [0x18] NVIDIA H100 80GB HBM3"
      auto on = std::find(w.begin(), w.end(), "on");
      if (w.size() > 2 && w[1] == "Rank" && on != w.end() && on + 1 != w.end()) {
        ++log.ranks;
        hosts.insert(*(on + 1));
        auto bracket = line.find(']');
        if (log.device.empty() && bracket != std::string::npos) {
          log.device = line.substr(bracket + 1);
          log.device.erase(0, log.device.find_first_not_of(' '));
        }
      }
      continue;
    }
    // A data row: size count type redop [root] time algbw busbw #wrong time algbw busbw #wrong.
    if (!number(w[0])) continue;  // other tool output interleaved in the log
    if (w.size() != 12 && w.size() != 13)
      fail(number_of_line, fmt::format("a result row has {} columns; nccl-tests prints 12 or 13", w.size()));
    std::size_t t = w.size() == 13 ? 5 : 4;
    auto time = number(w[t]), algbw = number(w[t + 1]), busbw = number(w[t + 2]);
    if (!time || !algbw || !busbw) fail(number_of_line, "the out-of-place time, algbw and busbw are not numbers");
    NcclTestsRow r;
    r.bytes = *number(w[0]);
    r.time_s = *time * 1e-6;
    r.algbw = *algbw * 1e9;
    r.busbw = *busbw * 1e9;
    const std::optional<double> in_place = number(w[t + 4]);
    r.in_place_time_s = in_place.value_or(0) * 1e-6;
    // Every value is checked: a row that cannot be a measurement stops the read, naming its line.
    if (r.bytes < 0 || r.bytes > 1e15 || r.bytes != std::floor(r.bytes))
      fail(number_of_line, fmt::format("size {} is not a whole number of bytes from 0 to 1e15", w[0]));
    if (!(r.time_s > 0) || r.time_s > kMaxCollectiveSeconds)
      fail(number_of_line, fmt::format("the out-of-place time {} us is not a duration above 0 and up to {:.0f} s", w[t], kMaxCollectiveSeconds));
    if (r.algbw < 0 || r.busbw < 0) fail(number_of_line, "algbw and busbw cannot be negative");
    if (in_place && (r.in_place_time_s < 0 || r.in_place_time_s > kMaxCollectiveSeconds))
      fail(number_of_line, fmt::format("the in-place time {} us is not a duration from 0 to {:.0f} s", w[t + 4], kMaxCollectiveSeconds));
    last_redop = w[3];
    log.rows.push_back(r);
  }
  if (log.rows.empty()) fail(number_of_line, "no result rows found: is this nccl-tests output?");
  log.nodes = std::max<std::int64_t>(1, static_cast<std::int64_t>(hosts.size()));
  // The collective: from the header when nccl-tests printed it; otherwise from busbw / algbw
  // (nccl-tests' bus factors) and the reduction column.
  if (header_op) {
    log.op = *header_op;
    log.op_source = "the log's header";
    return log;
  }
  const NcclTestsRow& big = log.rows.back();
  double ratio = big.algbw > 0 ? big.busbw / big.algbw : 1.0;
  if (log.ranks == 0)  // no rank lines: all-reduce's 2(n−1)/n ≥ 1, the others' (n−1)/n < 1
    log.ranks = std::max<std::int64_t>(1, std::llround(ratio >= 1 ? 2.0 / std::max(2.0 - ratio, 1e-9) : 1.0 / (1.0 - ratio)));
  double n = static_cast<double>(log.ranks);
  if (std::abs(ratio - 2 * (n - 1) / n) < 0.02) {
    log.op = CollectiveOp::all_reduce;
  } else if (std::abs(ratio - (n - 1) / n) < 0.02) {
    log.op = last_redop == "none" ? CollectiveOp::all_gather : CollectiveOp::reduce_scatter;
  } else {
    log.op = CollectiveOp::broadcast;
  }
  log.op_source = fmt::format("busbw/algbw = {:.3f} with {} ranks", ratio, log.ranks);
  return log;
}

double nccl_tests_bus_factor(CollectiveOp op, std::int64_t ranks) {
  const double n = static_cast<double>(std::max<std::int64_t>(1, ranks));
  switch (op) {
    case CollectiveOp::all_reduce: return 2 * (n - 1) / n;
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_to_all: return (n - 1) / n;
    default: return 1.0;
  }
}

std::string nccl_tests_binary(CollectiveOp op) {
  for (const auto& [prefix, o] : binaries())
    if (o == op) return prefix + "_perf";
  throw std::invalid_argument("nccl-tests has no binary for this collective");
}

std::string nccl_tests_log_text(CollectiveOp op, const std::string& host, const std::vector<std::string>& devices,
                                const std::vector<NcclTestsRow>& rows) {
  const auto ranks = static_cast<std::int64_t>(devices.size());
  std::string out = fmt::format("# Collective test starting: {}\n# plumb-validate collectives: one process, {} GPUs\n#\n",
                                nccl_tests_binary(op), ranks);
  for (std::size_t r = 0; r < devices.size(); ++r)
    out += fmt::format("#  Rank {:2} Group  0 Pid 0 on {} device {:2} [0x00] {}\n", r, host, r, devices[r]);
  out += "#\n#                                                              out-of-place                       in-place\n";
  out += "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
  const bool reduces = op == CollectiveOp::all_reduce || op == CollectiveOp::reduce_scatter;
  const double factor = nccl_tests_bus_factor(op, ranks);
  for (const NcclTestsRow& r : rows) {
    auto bw = [&](double seconds) { return seconds > 0 ? r.bytes / seconds / 1e9 : 0.0; };
    out += fmt::format("{:>12.0f} {:>13.0f} {:>9} {:>7} {:>7} {:>8.2f} {:>7.2f} {:>7.2f} {:>6} {:>8.2f} {:>7.2f} {:>7.2f} {:>6}\n", r.bytes,
                       r.bytes / 4, "float", reduces ? "sum" : "none", -1, r.time_s * 1e6, bw(r.time_s), bw(r.time_s) * factor, 0,
                       r.in_place_time_s * 1e6, bw(r.in_place_time_s), bw(r.in_place_time_s) * factor, 0);
  }
  return out;
}

}  // namespace plumb
