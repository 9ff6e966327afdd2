#include "validate/host/host_pipeline_device.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <fmt/format.h>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <sys/utsname.h>
#include <thread>

#include "validate/host/host_rank.hpp"

namespace plumb {
namespace {

// Events of the step: a stamp (the recording rank's clock) once done.
struct Stamp {
  double at = 0;
  bool done = false;
};

class HostPipelineDevice final : public PipelineDevice {
 public:
  HostPipelineDevice(const VirtualRun& run, bool exclusive) : exclusive_(exclusive), ranks_(static_cast<int>(run.job.layout.pp)) {
    for (int r = 0; r < ranks_; ++r) ranks_state_.push_back(std::make_unique<HostRank>(run, r));
    lanes_.resize(static_cast<std::size_t>(ranks_));
    for (int r = 0; r < ranks_; ++r) threads_.emplace_back([this, r] { serve(r); });
  }
  ~HostPipelineDevice() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    done_.notify_all();  // a rank waiting for an event no one will record any more
    for (std::thread& t : threads_) t.join();
  }

  DeviceIdentity identity() const override {
    return {exclusive_ ? host_device_name() : host_device_name() + ", ranks at once", host_software(), 0};
  }
  int units(int) const override { return 1; }

  void begin_step() override {
    std::lock_guard lock(mutex_);
    stamps_.clear();
    for (Lane& l : lanes_) l.clock = 0;
  }

  Event record(int rank) override {
    std::lock_guard lock(mutex_);
    stamps_.emplace_back();
    const Event e = stamps_.size() - 1;
    push(rank, [this, e](Lane& l) {
      std::lock_guard inner(mutex_);
      stamps_[e] = {l.clock, true};
      done_.notify_all();
    });
    return e;
  }

  void wait(int rank, Event e) override {
    std::lock_guard lock(mutex_);
    push(rank, [this, e](Lane& l) {
      std::unique_lock inner(mutex_);
      done_.wait(inner, [&] { return stamps_[e].done || stopping_; });
      l.clock = std::max(l.clock, stamps_[e].at);
    });
  }

  void launch(int rank, const KernelStep& k) override {
    std::lock_guard lock(mutex_);
    push(rank, [this, rank, &k](Lane& l) { l.clock += alone([&] { return at(rank).run(k); }); });
  }

  void send(int rank, int to_rank, double bytes) override {
    std::lock_guard lock(mutex_);
    push(rank, [this, rank, to_rank, bytes](Lane& l) { l.clock += alone([&] { return at(rank).send_to(at(to_rank).inbox(), bytes); }); });
  }

  void stream(int rank, double bytes) override {
    std::lock_guard lock(mutex_);
    push(rank, [this, rank, bytes](Lane& l) { l.clock += alone([&] { return at(rank).stream(bytes); }); });
  }

  void end_step() override {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return std::all_of(lanes_.begin(), lanes_.end(), [](const Lane& l) { return l.work.empty() && !l.busy; }); });
    if (!failure_.empty()) throw std::runtime_error(failure_);
  }

  double seconds(int, Event from, Event to) override {
    std::lock_guard lock(mutex_);
    return stamps_.at(to).at - stamps_.at(from).at;
  }

 private:
  struct Lane {
    std::deque<std::function<void(Lane&)>> work;
    double clock = 0;
    bool busy = false;
  };

  // Queues work on a rank's thread (the caller holds the mutex).
  void push(int rank, std::function<void(Lane&)> f) {
    lanes_[static_cast<std::size_t>(rank)].work.push_back(std::move(f));
    wake_.notify_all();
  }

  void serve(int rank) {
    Lane& lane = lanes_[static_cast<std::size_t>(rank)];
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || !lane.work.empty(); });
      if (stopping_) return;
      std::function<void(Lane&)> f = std::move(lane.work.front());
      lane.work.pop_front();
      lane.busy = true;
      lock.unlock();
      try {
        f(lane);
      } catch (const std::exception& e) {
        std::lock_guard inner(mutex_);
        if (failure_.empty()) failure_ = fmt::format("rank {}: {}", rank, e.what());
      }
      lock.lock();
      lane.busy = false;
      idle_.notify_all();
    }
  }

  HostRank& at(int rank) { return *ranks_state_[static_cast<std::size_t>(rank)]; }

  // Times f with no other rank's kernel running (unless the ranks run at once): each is measured on
  // the machine as the bench measured it, not sharing a core's other hardware thread, its caches or
  // its clock boost with another rank's.
  template <class F>
  double alone(F f) {
    if (!exclusive_) return f();
    std::lock_guard lock(exclusive_mutex_);
    return f();
  }

  bool exclusive_;
  std::mutex exclusive_mutex_;
  int ranks_;
  std::vector<std::unique_ptr<HostRank>> ranks_state_;
  std::mutex mutex_;
  std::condition_variable wake_, done_, idle_;
  std::vector<Lane> lanes_;
  std::deque<Stamp> stamps_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
  std::string failure_;
};

}  // namespace

std::string host_device_name() {
  utsname u{};
  uname(&u);
  return fmt::format("host CPU ({}, {} threads)", u.machine, std::max(1u, std::thread::hardware_concurrency()));
}

std::string host_software() { return fmt::format("libstdc++ {}", __GLIBCXX__); }

std::unique_ptr<PipelineDevice> make_host_pipeline_device(const VirtualRun& run, bool exclusive) {
  return std::make_unique<HostPipelineDevice>(run, exclusive);
}

}  // namespace plumb
