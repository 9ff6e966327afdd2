#include "models/schedules/zero_bubble_search.hpp"

#include <algorithm>
#include <limits>
#include <optional>

#include "models/schedules/generators.hpp"
#include "models/schedules/registry.hpp"

namespace plumb {
namespace {

enum Kind { kF = 0, kB = 1, kW = 2 };

// One attempt of the placement (Qi et al. §3.2, as the authors' runtime runs it: sail-sg/zero-bubble-
// pipeline-parallelism, megatron/core/pipeline_parallel/auto_schedule.py, Graph.manual_order): micro-batch
// by micro-batch, each stage's F's, then its B's from the last stage back, W's put in where they fit a gap,
// where memory forces them or where the gap would make this stage's bubble the largest.
class Placement {
 public:
  struct Variant {
    bool bubble_before_first_b = false;  // let the warm-up's F's run past the first B's arrival
    bool prioritize_b = false;           // skip a stage's F when its successor is two F's behind
    bool fill_small_gaps = false;        // put a W into a gap even when it does not raise the largest bubble
  };

  Placement(std::int64_t stages, std::int64_t m, const OpTimes& t, double limit, Variant v)
      : s_(stages), m_(m), t_(t), limit_(limit), v_(v), end_(3 * stages * m, 0.0), count_(3 * stages, 0),
        e_(stages, 0.0), mem_(stages, 0.0), bubble_(stages, 0.0), order_(stages) {}

  // The per-stage orders, or nullopt where memory cannot hold the next op.
  std::optional<std::vector<std::vector<PipeOp>>> run() {
    for (std::int64_t i = 0; i < m_; ++i)
      if (!(i == 0 ? first_microbatch() : next_microbatch(i))) return std::nullopt;
    for (std::int64_t j = 0; j < s_; ++j)
      while (n(j, kW) < m_) put(j, kW);
    return order_;
  }

  // The longest stage's span, first F's start to last W's end: the time the attempts are ranked by.
  double span() const {
    double longest = 0;
    for (std::int64_t j = 0; j < s_; ++j) longest = std::max(longest, done(kW, j, m_ - 1) - done(kF, j, 0) + t_.forward);
    return longest;
  }

 private:
  double cost(Kind k) const { return k == kF ? t_.forward : k == kB ? t_.input_grad : t_.weight_grad; }
  // An F holds an activation set; its B frees all but what the W reads (t_.stash of a set); the W the rest.
  double memory(Kind k) const { return k == kF ? 1.0 : k == kB ? -(1.0 - t_.stash) : -t_.stash; }
  std::int64_t& n(std::int64_t j, Kind k) { return count_[static_cast<std::size_t>(3 * j + k)]; }
  std::int64_t n(std::int64_t j, Kind k) const { return count_[static_cast<std::size_t>(3 * j + k)]; }
  double& done(Kind k, std::int64_t j, std::int64_t mb) { return end_[static_cast<std::size_t>((k * s_ + j) * m_ + mb)]; }
  double done(Kind k, std::int64_t j, std::int64_t mb) const { return end_[static_cast<std::size_t>((k * s_ + j) * m_ + mb)]; }
  double largest_bubble() const { return largest_bubble_; }  // bubbles only grow: kept as they do
  bool fits(std::int64_t j, Kind k) const { return mem_[static_cast<std::size_t>(j)] + memory(k) <= limit_ + 1e-9; }

  void put(std::int64_t j, Kind k) {
    const std::size_t js = static_cast<std::size_t>(j);
    const std::int64_t mb = n(j, k);
    double end = e_[js] + cost(k);
    const double unhindered = end;
    if (k == kF && j > 0) end = std::max(end, done(kF, j - 1, mb) + t_.comm + cost(k));
    if (k == kB && j + 1 < s_) end = std::max(end, done(kB, j + 1, mb) + t_.comm + cost(k));
    if (n(j, kF) > 0) {
      bubble_[js] += end - unhindered;
      largest_bubble_ = std::max(largest_bubble_, bubble_[js]);
    }
    e_[js] = end;
    done(k, j, mb) = end;
    mem_[js] += memory(k);
    ++n(j, k);
    const OpKind op = k == kF ? OpKind::forward : k == kB ? OpKind::backward_input : OpKind::weight;
    order_[js].push_back(stage_op(op, mb, j));
  }

  // Before the op that waits for `arrival`: W's that end by then, and one more into a shorter gap when
  // it would not make this stage's bubble the largest (or always, in the variant that fills small gaps).
  void fill_gap(std::int64_t j, double arrival) {
    const std::size_t js = static_cast<std::size_t>(j);
    while (n(j, kW) < n(j, kB) && e_[js] + t_.weight_grad <= arrival) put(j, kW);
    if (n(j, kW) < n(j, kB) && e_[js] < arrival) {
      const bool small = arrival - e_[js] <= largest_bubble() - bubble_[js];
      if (!small || v_.fill_small_gaps) put(j, kW);
    }
  }

  // W's until memory admits an op of kind k; false when none is left to free it.
  bool make_room(std::int64_t j, Kind k) {
    while (!fits(j, k)) {
      if (n(j, kW) >= n(j, kB)) return false;
      put(j, kW);
    }
    return true;
  }

  bool first_microbatch() {
    for (std::int64_t j = 0; j < s_; ++j) put(j, kF);
    // How many more F's each stage runs before its first B arrives, from the last stage back.
    std::vector<std::int64_t> extra(static_cast<std::size_t>(s_), 0);
    double b_end = done(kF, s_ - 1, 0) + t_.input_grad;
    for (std::int64_t j = s_ - 2; j >= 0; --j) {
      const std::size_t js = static_cast<std::size_t>(j);
      double mem = mem_[js], busy = e_[js];
      while (n(j, kF) + extra[js] < m_ && mem + memory(kF) <= limit_ + 1e-9) {
        if (v_.bubble_before_first_b ? busy + t_.forward > b_end + t_.comm : busy >= b_end + t_.comm) break;
        mem += memory(kF);
        busy += t_.forward;
        ++extra[js];
      }
      b_end = std::max(busy, b_end + t_.comm) + t_.input_grad;
    }
    // A stage never runs ahead of the one before it.
    for (std::int64_t j = 1; j < s_; ++j) {
      const std::size_t js = static_cast<std::size_t>(j);
      while (extra[js] > 0 && extra[js] >= extra[js - 1] && n(j, kF) + extra[js] < m_) --extra[js];
    }
    for (std::int64_t j = s_ - 1; j >= 0; --j) {
      for (std::int64_t k = 0; k < extra[static_cast<std::size_t>(j)]; ++k) {
        if (!fits(j, kF)) return false;
        put(j, kF);
      }
      if (!make_room(j, kB)) return false;
      put(j, kB);
    }
    return true;
  }

  bool next_microbatch(std::int64_t i) {
    std::vector<std::int64_t> wants_f(static_cast<std::size_t>(s_), 0);
    for (std::int64_t j = 0; j < s_; ++j) {
      const std::size_t js = static_cast<std::size_t>(j);
      if (n(j, kF) >= m_) continue;
      if (v_.prioritize_b && j + 1 < s_ && n(j, kF) >= n(j + 1, kF) + 2) {
        const double successor_free = e_[js + 1] + t_.forward + t_.input_grad + t_.comm;
        if (e_[js] >= successor_free) continue;
        double w_cost = 0, mem = mem_[js] + memory(kF);
        for (std::int64_t w = n(j, kW); mem > limit_ + 1e-9 && w < n(j, kB); ++w) {
          w_cost += t_.weight_grad;
          mem += memory(kW);
        }
        if (e_[js] + t_.forward + w_cost <= successor_free) {
          wants_f[js] = 1;
          continue;
        }
        if (successor_free - e_[js] <= largest_bubble() - bubble_[js]) continue;
      }
      wants_f[js] = 1;
    }
    for (std::int64_t j = s_ - 2; j >= 0; --j)
      wants_f[static_cast<std::size_t>(j)] = std::min(wants_f[static_cast<std::size_t>(j)], wants_f[static_cast<std::size_t>(j + 1)]);
    for (std::int64_t j = 0; j < s_; ++j) {
      if (wants_f[static_cast<std::size_t>(j)] == 0) continue;
      if (!make_room(j, kF)) return false;
      if (j > 0) fill_gap(j, done(kF, j - 1, n(j, kF)) + t_.comm);
      put(j, kF);
    }
    for (std::int64_t j = s_ - 1; j >= 0; --j) {
      if (n(j, kB) != i) return false;  // the placement runs one micro-batch's B's at a time
      if (!make_room(j, kB)) return false;
      if (j + 1 < s_) fill_gap(j, done(kB, j + 1, i) + t_.comm);
      if (j == 0 && n(j, kF) == m_)
        while (n(j, kW) < n(j, kB)) put(j, kW);
      put(j, kB);
    }
    return true;
  }

  std::int64_t s_, m_;
  OpTimes t_;
  double limit_;
  Variant v_;
  std::vector<double> end_;           // each op's end, by kind, stage and micro-batch
  std::vector<std::int64_t> count_;   // ops placed, by stage and kind
  std::vector<double> e_, mem_, bubble_;  // per stage: its end, its memory in activation sets, its idle time
  double largest_bubble_ = 0;
  std::vector<std::vector<PipeOp>> order_;
};

}  // namespace

std::optional<std::vector<std::vector<PipeOp>>> zero_bubble_search(std::int64_t stages, std::int64_t microbatches,
                                                                     const OpTimes& times, double limit) {
  std::optional<std::vector<std::vector<PipeOp>>> best;
  double best_span = std::numeric_limits<double>::infinity();
  for (bool before : {true, false})
    for (bool prioritize : {true, false})
      for (bool fill : {true, false}) {
        Placement p(stages, microbatches, times, limit, {before, prioritize, fill});
        auto order = p.run();
        if (order && p.span() < best_span) {
          best_span = p.span();
          best = std::move(order);
        }
      }
  return best;
}

}  // namespace plumb
