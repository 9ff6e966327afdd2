// The engine: streams, SM partitions, determinism, deadlock detection, critical path, outputs.
#include <doctest/doctest.h>

#include "sim/engine.hpp"
#include "sim/outputs.hpp"

using namespace plumb::sim;

namespace {

// One GPU with two streams: the machine most engine checks need.
struct TwoStreams {
  Machine m;
  StreamId first, second;
  TwoStreams(const char* gpu, std::int32_t sms, const char* a, const char* b) {
    std::int32_t g = m.add_gpu(gpu, sms);
    first = m.add_stream(g, a);
    second = m.add_stream(g, b);
  }
};

}  // namespace

TEST_CASE("in-order streams run one task at a time; different streams overlap") {
  TwoStreams two("gpu0", 132, "compute", "copy");
  Machine& m = two.m;
  StreamId a = two.first, b = two.second;
  TaskGraph g;
  TaskId t1 = g.add_compute("t1", a, 100, 1);  // fixed-SM tasks keep their duration
  TaskId t2 = g.add_compute("t2", a, 50, 1);
  TaskId t3 = g.add_compute("t3", b, 70, 1);
  g.finalize();
  SimResult r = simulate(g, m);
  CHECK(r.end[t1] == 100);
  CHECK(r.start[t2] == 100);
  CHECK(r.end[t2] == 150);
  CHECK(r.start[t3] == 0);
  CHECK(r.makespan == 150);
  CHECK(r.stream_busy[0] == 150);
  CHECK(stream_utilisation(m, r)[1].busy == doctest::Approx(70.0 / 150.0));
}

TEST_CASE("on random graphs every task starts when its last dependency and its stream's previous task have ended") {
  // Fixed-SM tasks of a few distinct durations, so many events share an instant and times span many
  // binary orders (the event queue is a radix heap on time); markers off-stream join fan-outs.
  Machine m;
  for (int g = 0; g < 8; ++g) {
    std::int32_t gpu = m.add_gpu("gpu", 132);
    for (int s = 0; s < 3; ++s) m.add_stream(gpu, "s");
  }
  std::uint64_t x = 7;
  auto next = [&](std::uint64_t mod) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return (x >> 33) % mod;
  };
  for (int round = 0; round < 5; ++round) {
    TaskGraph g;
    const int n = 3000;
    for (int i = 0; i < n; ++i) {
      bool marker = next(10) == 0;
      TaskId t = marker ? g.add_marker("m")
                        : g.add_compute("c", static_cast<StreamId>(next(24)), static_cast<Time>(next(4) * (1ULL << next(40))), 1);
      for (int d = static_cast<int>(next(3)); d > 0 && t > 0; --d) g.add_dependency(static_cast<TaskId>(next(t)), t);
    }
    g.finalize();
    SimResult r = simulate(g, m);
    std::vector<Time> ready(g.size(), 0);
    for (TaskId u = 0; u < g.size(); ++u)
      for (const TaskId* s = g.successors_begin(u); s != g.successors_end(u); ++s) ready[*s] = std::max(ready[*s], r.end[u]);
    std::vector<Time> stream_free(m.streams().size(), 0);
    Time last = 0;
    for (TaskId t = 0; t < g.size(); ++t) {
      if (StreamId s = g.stream(t); s != kNoStream) {
        ready[t] = std::max(ready[t], stream_free[static_cast<std::size_t>(s)]);
        stream_free[static_cast<std::size_t>(s)] = r.end[t];
      }
      REQUIRE(r.start[t] == ready[t]);
      REQUIRE(r.end[t] == r.start[t] + g.work(t));
      last = std::max(last, r.end[t]);
    }
    CHECK(r.makespan == last);
  }
}

TEST_CASE("a compute task beside a kernel holding 20 of 132 SMs takes 132/112 of its time") {
  TwoStreams two("h800", 132, "compute", "comm");
  Machine& m = two.m;
  StreamId compute = two.first, comm = two.second;
  TaskGraph g;
  const Time work = 1'000'000'000;  // 1 ms at full speed
  TaskId gemm = g.add_compute("GEMM", compute, work);
  g.add_compute("all-to-all kernel", comm, 2 * work, 20);
  g.finalize();
  SimResult r = simulate(g, m);
  CHECK(r.end[gemm] == doctest::Approx(work * 132.0 / 112.0).epsilon(1e-9));
}

TEST_CASE("copies on the copy engines leave the SMs to compute; a shared-SM task beside it would halve it") {
  TwoStreams two("h100", 132, "compute", "copy");
  const Time work = 1'000'000'000;
  TaskGraph g;
  TaskId gemm = g.add_compute("GEMM chunk", two.first, work);
  TaskId copy = g.add_compute("peer copy", two.second, work);
  g.set_off_sms(copy);
  g.finalize();
  SimResult r = simulate(g, two.m);
  CHECK(r.end[gemm] == work);
  CHECK(r.end[copy] == work);
  TaskGraph shared;  // the same two tasks, both on the SMs: each at half speed
  TaskId a = shared.add_compute("GEMM chunk", two.first, work);
  shared.add_compute("SM copy kernel", two.second, work);
  shared.finalize();
  CHECK(simulate(shared, two.m).end[a] == 2 * work);
  TaskGraph other;
  CHECK_THROWS_AS(other.set_off_sms(other.add_marker("end")), std::invalid_argument);  // only compute runs anywhere
}

TEST_CASE("compute slows only while SMs are taken, and speeds up when they are returned") {
  TwoStreams two("gpu", 100, "compute", "comm");
  Machine& m = two.m;
  StreamId compute = two.first, comm = two.second;
  TaskGraph g;
  TaskId job = g.add_compute("work", compute, 1000);
  g.add_compute("kernel holding half", comm, 400, 50);
  g.finalize();
  SimResult r = simulate(g, m);
  // 400 ps at half speed does 200 of the work; the remaining 800 run at full speed: 1200 in all.
  CHECK(r.end[job] == 1200);
  // The run ends with its last task, not with the completion the slowed task was first given (2000).
  CHECK(r.makespan == 1200);
  // Two such tasks on two streams of one GPU share its SMs.
  Machine m2;
  std::int32_t g2 = m2.add_gpu("gpu", 100);
  StreamId s1 = m2.add_stream(g2, "a"), s2 = m2.add_stream(g2, "b");
  TaskGraph h;
  TaskId x = h.add_compute("x", s1, 1000);
  TaskId y = h.add_compute("y", s2, 500);
  h.finalize();
  SimResult q = simulate(h, m2);
  CHECK(q.end[y] == 1000);  // half speed each until y is done
  CHECK(q.end[x] == 1500);  // then x alone: 500 left at full speed
  CHECK(q.makespan == 1500);
}

TEST_CASE("collectives sharing a GPU's network port split its bandwidth, max-min fair, and leave compute alone") {
  Machine m;
  std::int32_t gpu = m.add_gpu("gpu", 132);
  StreamId ep = m.add_stream(gpu, "EP all-to-all"), dp = m.add_stream(gpu, "DP reduce-scatter"), compute = m.add_stream(gpu, "compute");
  TaskGraph g;
  // 10 us of all-to-all alone; a reduce-scatter of 10 us alone starts 5 us later. From 5 us they
  // share the port: the all-to-all's last 5 us take 10, ending at 15; the reduce-scatter has 5 us of
  // its own left then, alone again, ending at 20.
  TaskId a2a = g.add_compute("a2a", ep, 10'000'000, 20);
  g.set_shares_port(a2a);
  TaskId wait = g.add_compute("before", dp, 5'000'000, 1);
  TaskId rs = g.add_compute("rs", dp, 10'000'000, 20);
  g.set_shares_port(rs);
  g.add_dependency(wait, rs);
  TaskId gemm = g.add_compute("gemm", compute, 10'000'000, 40);  // holds its SMs: a fixed duration
  g.finalize();
  SimResult r = simulate(g, m);
  CHECK(r.end[a2a] == 15'000'000);
  CHECK(r.end[rs] == 20'000'000);
  CHECK(r.end[gemm] == 10'000'000);
  CHECK_THROWS_AS(g.set_shares_port(9999), std::invalid_argument);
}

TEST_CASE("a configurable rate curve sets the speed for a share of the SMs") {
  Machine m;
  m.curve = RateCurve({{0.0, 0.0}, {0.5, 0.9}, {1.0, 1.0}});  // memory-bound: half the SMs give 90%
  std::int32_t gpu = m.add_gpu("gpu", 100);
  StreamId compute = m.add_stream(gpu, "compute"), comm = m.add_stream(gpu, "comm");
  TaskGraph g;
  TaskId job = g.add_compute("work", compute, 900);
  g.add_compute("hold half", comm, 5000, 50);
  g.finalize();
  CHECK(simulate(g, m).end[job] == 1000);
}

TEST_CASE("the critical path of a known graph is the known chain") {
  TwoStreams two("gpu", 10, "s0", "s1");
  Machine& m = two.m;
  StreamId s0 = two.first, s1 = two.second;
  TaskGraph g;
  TaskId a = g.add_compute("A", s0, 10, 1);
  TaskId b = g.add_compute("B", s1, 30, 1);
  TaskId c = g.add_compute("C", s0, 5, 1);   // after A on its stream, and after B
  TaskId d = g.add_compute("D", s1, 2, 1);   // after B on its stream
  TaskId e = g.add_marker("E");
  g.add_dependency(b, c);
  g.add_dependency(c, e);
  g.add_dependency(d, e);
  g.finalize();
  SimResult r = simulate(g, m);
  CHECK(r.makespan == 35);
  CHECK(critical_path(r) == std::vector<TaskId>{b, c, e});
  (void)a;
}

TEST_CASE("the same graph twice gives a byte-identical trace") {
  auto build_and_trace = [] {
    Topology t = nvswitch_node({4, 100e9, 1000});
    Machine m;
    for (int i = 0; i < 4; ++i) {
      std::int32_t gpu = m.add_gpu("gpu" + std::to_string(i), 132, t.gpus()[static_cast<std::size_t>(i)]);
      m.add_stream(gpu, "compute");
      m.add_stream(gpu, "comm");
    }
    TaskGraph g;
    for (int i = 0; i < 4; ++i) {
      TaskId f = g.add_compute("F", 2 * i, 1'000'000);
      g.set_memory_delta(f, 1 << 20);
      TaskId x = g.add_transfer("send", 2 * i + 1, t.gpus()[static_cast<std::size_t>(i)],
                                t.gpus()[static_cast<std::size_t>((i + 1) % 4)], 1e6, 8);
      g.add_dependency(f, x);
      TaskId back = g.add_compute("B", 2 * i, 2'000'000);
      g.set_memory_delta(back, -(1 << 20));
      g.add_dependency(x, back);
    }
    g.finalize();
    SimResult r = simulate(g, m, &t);
    CHECK(r.peak_memory[0] == (1 << 20));
    return chrome_trace(g, m, r, &t);
  };
  std::string first = build_and_trace(), second = build_and_trace();
  CHECK(first == second);
  CHECK(first.find(R"("ph":"s")") != std::string::npos);  // flow arrows for transfers
  CHECK(first.find(R"("name":"memory","ph":"C")") != std::string::npos);
  CHECK(first.find(R"("name":"thread_name")") != std::string::npos);
}

TEST_CASE("a cyclic graph stops with a deadlock error naming the waiting tasks") {
  TwoStreams two("gpu0", 132, "s0", "s1");
  Machine& m = two.m;
  StreamId s0 = two.first, s1 = two.second;
  TaskGraph g;
  TaskId ok = g.add_compute("fine", s0, 10, 1);
  TaskId a = g.add_compute("A", s0, 10, 1);
  TaskId b = g.add_compute("B", s1, 10, 1);
  g.add_dependency(a, b);
  g.add_dependency(b, a);
  g.finalize();
  try {
    simulate(g, m);
    FAIL("expected a deadlock");
  } catch (const DeadlockError& e) {
    CHECK(e.waiting() == std::vector<TaskId>{a, b});
    std::string what = e.what();
    CHECK(what.find("2 of 3 tasks can never run") != std::string::npos);
    CHECK(what.find("\"A\" (#1) on gpu0/s0 waits for \"B\" (#2)") != std::string::npos);
    CHECK(what.find("\"B\" (#2) on gpu0/s1 waits for \"A\" (#1)") != std::string::npos);
  }
  (void)ok;
}

TEST_CASE("a task stuck behind a blocked task of its stream is reported as such") {
  Machine m;
  std::int32_t gpu = m.add_gpu("gpu0", 132);
  StreamId s = m.add_stream(gpu, "s");
  TaskGraph g;
  TaskId first = g.add_compute("waits for later", s, 10, 1);
  TaskId second = g.add_compute("later", s, 10, 1);
  g.add_dependency(second, first);  // issued in the wrong order on one in-order stream
  g.finalize();
  CHECK_THROWS_WITH_AS(simulate(g, m), doctest::Contains("\"later\" (#1) waits for \"waits for later\" (#0) ahead of it on its stream"),
                       DeadlockError);
}
