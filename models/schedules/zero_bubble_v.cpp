#include "models/schedules/zero_bubble_v.hpp"

#include <algorithm>
#include <array>
#include <deque>

#include "models/schedules/generators.hpp"

namespace plumb {
namespace {

enum Kind { kF = 0, kB = 1, kW = 2 };
constexpr double kNotRun = -1.0;
constexpr double kSlack = 1e-9;  // activation sets are sums of shares: compare with room for rounding

struct Infeasible {};  // an op the placement cannot put: the variant is dropped

// A chunk index as the runtime counts it: a forward's chunk 0 is the stage going down the ranks, a
// backward's (and its W's) chunk 0 the stage coming back, whose gradient arrives first.
struct Placed {
  Kind kind;
  int chunk;
  std::int64_t mb;
};

struct Attempt {
  std::vector<std::vector<Placed>> order;
  std::vector<double> bubble;  // per rank: time waited after its first forward
  double largest = 0;
};

class VPlacement {
 public:
  VPlacement(std::int64_t p, std::int64_t m, const OpTimes& t, double limit, bool fill_f, bool fill_b,
             std::vector<double> approved)
      : p_(p), m_(m), cost_{t.forward, t.input_grad, t.weight_grad}, c_(t.comm),
        mem_{1.0, -(1.0 - t.stash), -t.stash}, limit_(limit), fill_f_(fill_f), fill_b_(fill_b),
        approved_(std::move(approved)), count_(static_cast<std::size_t>(p)), end_(static_cast<std::size_t>(6 * p * m), kNotRun),
        cur_(static_cast<std::size_t>(p), 0.0), held_(static_cast<std::size_t>(p), 0.0), bubble_(static_cast<std::size_t>(p), 0.0),
        pending_(static_cast<std::size_t>(p)) {
    max_approved_ = approved_.empty() ? -1.0 : *std::max_element(approved_.begin(), approved_.end());
    attempt_.order.resize(static_cast<std::size_t>(p));
  }

  Attempt run() {
    warm_up();
    for (std::int64_t round = 0; round < 2 * m_; ++round) {
      backwards();
      forwards();
    }
    for (std::int64_t i = 0; i < p_; ++i)
      while (!at(pending_, i).empty()) put_w(i);
    attempt_.bubble = bubble_;
    attempt_.largest = largest_bubble(-1);
    return attempt_;
  }

 private:
  template <class V>
  static auto at(V& v, std::int64_t i) -> decltype(v[0]) {
    return v[static_cast<std::size_t>(i)];
  }
  std::size_t id(int kind, int chunk, std::int64_t rank, std::int64_t mb) const {
    return static_cast<std::size_t>(((kind * 2 + chunk) * p_ + rank) * m_ + mb);
  }
  int& n(std::int64_t rank, int kind, int chunk) { return at(count_, rank)[static_cast<std::size_t>(kind * 2 + chunk)]; }
  // The end of an op the next one waits for; the runtime's index -1 (no such op) reads its last entry.
  double end_of(std::optional<std::size_t> i) const { return i ? end_[*i] : end_.back(); }

  double largest_bubble(std::int64_t rank) const {
    double b = largest_;  // bubbles only grow: kept as they do
    if (rank >= 0 && !approved_.empty()) b = std::max(b, max_approved_ - at(approved_, rank));
    return b;
  }

  void put(int kind, int chunk, std::int64_t rank) {
    const int k = n(rank, kind, chunk);
    if (k >= m_ || at(held_, rank) + mem_[static_cast<std::size_t>(kind)] > limit_ + kSlack) throw Infeasible{};
    const double no_wait = at(cur_, rank) + cost_[static_cast<std::size_t>(kind)];
    double t = no_wait;
    // Its own earlier part on this rank: the forward of chunk 0 before chunk 1's, the forward before the
    // backward, the backward before its W.
    if (kind > 0 || chunk > 0) {
      const std::size_t before = kind == kW ? id(kB, chunk, rank, k) : id((kind * 2 + chunk - 1) / 2, (kind * 2 + chunk - 1) % 2, rank, k);
      if (end_[before] < 0) throw Infeasible{};
    }
    // Its neighbour's: chunk 1 comes from the rank below, chunk 0 from the rank above (W's stay local).
    if (kind < kW) {
      const std::int64_t from = chunk == 1 ? rank + 1 : rank - 1;
      if (from >= 0 && from < p_) {
        const double ready = end_[id(kind, chunk, from, k)];
        if (ready < 0) throw Infeasible{};
        t = std::max(t, ready + c_ + cost_[static_cast<std::size_t>(kind)]);
      }
    }
    if (n(rank, kF, 0) > 0) {
      at(bubble_, rank) += t - no_wait;
      largest_ = std::max(largest_, at(bubble_, rank));
    }
    end_[id(kind, chunk, rank, k)] = t;
    at(cur_, rank) = t;
    at(held_, rank) += mem_[static_cast<std::size_t>(kind)];
    at(attempt_.order, rank).push_back({static_cast<Kind>(kind), chunk, k});
    if (kind == kB) at(pending_, rank).push_back(chunk);
    ++n(rank, kind, chunk);
  }

  void put_w(std::int64_t rank) {
    if (at(pending_, rank).empty()) throw Infeasible{};
    const int chunk = at(pending_, rank).front();
    at(pending_, rank).pop_front();
    put(kW, chunk, rank);
  }

  // The forwards before the first backward: chunk 0 down the ranks, then chunk 1 back up, each rank
  // taking more chunk-0 forwards while they fit before chunk 1 reaches it; then the ranks below catch up.
  void warm_up() {
    for (std::int64_t i = 0; i < p_; ++i) put(kF, 0, i);
    for (std::int64_t i = p_ - 1; i >= 0; --i) {
      if (i < p_ - 1) {
        const double arrives = end_[id(kF, 1, i + 1, 0)] + c_;
        while (at(held_, i) + mem_[kF] * static_cast<double>(2 + 2 * i) <= limit_ + kSlack && at(cur_, i) + cost_[kF] <= arrives &&
               n(i, kF, 0) < m_)
          for (std::int64_t j = 0; j <= i; ++j) put(kF, 0, j);
      }
      put(kF, 1, i);
    }
    int chunk = 0, idle = 0;
    for (std::int64_t i = 1; i < p_; ++i)
      while (n(i, kF, 0) + n(i, kF, 1) < n(i - 1, kF, 0) + n(i - 1, kF, 1)) {
        bool any = false;
        for (std::int64_t j = p_ - 1; j >= i; --j)
          if (n(j, kF, chunk) < m_) {
            put(kF, chunk, j);
            any = true;
          }
        idle = any ? 0 : idle + 1;
        if (idle == 2) throw Infeasible{};  // neither chunk has a forward left to put
        chunk = 1 - chunk;
      }
  }

  // W's before an op that would wait: while one fits the gap, and one more where the gap would make this
  // rank's bubble the largest (`fill`: also for a backward of chunk 0 or a forward).
  void fill_gap(std::int64_t rank, std::optional<std::size_t> waits_for, bool fill) {
    while (!at(pending_, rank).empty() && waits_for && end_[*waits_for] + c_ >= at(cur_, rank) + cost_[kW]) put_w(rank);
    if (!at(pending_, rank).empty() && end_of(waits_for) + c_ - at(cur_, rank) > largest_bubble(rank) - at(bubble_, rank) && fill)
      put_w(rank);
  }

  void backwards() {
    for (std::int64_t i = 0; i < p_; ++i)
      while (at(held_, i) + mem_[kB] > limit_ + kSlack) put_w(i);
    std::vector<std::int64_t> b0, b1;
    for (std::int64_t i = 0; i < p_; ++i) {
      if (n(i, kB, 1) >= n(i, kB, 0)) b0.push_back(i);
      else if (i == p_ - 1) b1.push_back(i);
      else if (end_[id(kB, 1, i + 1, n(i, kB, 1))] >= 0 || n(i, kB, 0) >= m_) b1.push_back(i);
      else b0.push_back(i);
    }
    std::vector<std::pair<std::int64_t, int>> order;
    for (auto it = b1.rbegin(); it != b1.rend(); ++it) order.emplace_back(*it, 1);
    for (std::int64_t i : b0) order.emplace_back(i, 0);
    for (auto [i, chunk] : order) {
      std::optional<std::size_t> waits_for;
      if (chunk == 1 && i < p_ - 1) waits_for = id(kB, 1, i + 1, n(i, kB, 1));
      if (chunk == 0 && i > 0) waits_for = id(kB, 0, i - 1, n(i, kB, 0));
      fill_gap(i, waits_for, chunk == 1 || fill_b_);
      put(kB, chunk, i);
    }
  }

  void forwards() {
    for (std::int64_t i = 0; i < p_; ++i) {
      if (n(i, kF, 1) >= m_) continue;
      int chunk = -1;
      if (n(i, kF, 1) >= n(i, kF, 0)) chunk = 0;
      else if (i == p_ - 1) chunk = 1;
      else if (end_[id(kF, 1, i + 1, n(i, kF, 1))] >= 0) chunk = 1;
      else if (n(i, kF, 0) < m_ && (i == 0 || end_[id(kF, 0, i - 1, n(i, kF, 0))] >= 0)) chunk = 0;
      if (chunk < 0) continue;
      while (at(held_, i) + mem_[kF] > limit_ + kSlack) put_w(i);
      std::optional<std::size_t> waits_for;
      if (chunk == 0 && i > 0) waits_for = id(kF, 0, i - 1, n(i, kF, 0));
      if (chunk == 1 && i < p_ - 1) waits_for = id(kF, 1, i + 1, n(i, kF, 1));
      fill_gap(i, waits_for, fill_f_);
      put(kF, chunk, i);
    }
  }

  std::int64_t p_, m_;
  std::array<double, 3> cost_;
  double c_;
  std::array<double, 3> mem_;
  double limit_;
  bool fill_f_, fill_b_;
  std::vector<double> approved_;
  double max_approved_ = -1;
  std::vector<std::array<int, 6>> count_;
  std::vector<double> end_, cur_, held_, bubble_;
  double largest_ = 0;  // the largest of bubble_
  std::vector<std::deque<int>> pending_;
  Attempt attempt_;
};

// One variant, retried with its own bubbles as the ones to beat while that shrinks the largest.
std::optional<Attempt> variant(std::int64_t p, std::int64_t m, const OpTimes& t, double limit, bool fill_f, bool fill_b) {
  std::optional<Attempt> best;
  std::vector<double> approved;
  for (;;) {
    std::optional<Attempt> next;
    try {
      next = VPlacement(p, m, t, limit, fill_f, fill_b, approved).run();
    } catch (const Infeasible&) {
    }
    if (!next || (best && next->largest >= best->largest)) return best;
    best = std::move(next);
    approved = best->bubble;
  }
}

}  // namespace

std::optional<std::vector<std::vector<PipeOp>>> zero_bubble_v_placement(std::int64_t ranks, std::int64_t microbatches,
                                                                          const OpTimes& times, double limit) {
  std::optional<Attempt> best;
  for (bool fill_b : {true, false})
    for (bool fill_f : {true, false})
      if (auto a = variant(ranks, microbatches, times, limit, fill_f, fill_b); a && (!best || a->largest < best->largest))
        best = std::move(a);
  if (!best) return std::nullopt;
  std::vector<std::vector<PipeOp>> ops(static_cast<std::size_t>(ranks));
  for (std::int64_t r = 0; r < ranks; ++r)
    for (const Placed& x : best->order[static_cast<std::size_t>(r)]) {
      // Model stages of the V: r going down, 2p−1−r coming back; a backward's chunk 0 is the latter.
      const bool down = (x.kind == kF) == (x.chunk == 0);
      const std::int64_t stage = down ? r : 2 * ranks - 1 - r;
      const OpKind kind = x.kind == kF ? OpKind::forward : x.kind == kB ? OpKind::backward_input : OpKind::weight;
      ops[static_cast<std::size_t>(r)].push_back(stage_op(kind, x.mb, stage));
    }
  return ops;
}

}  // namespace plumb
