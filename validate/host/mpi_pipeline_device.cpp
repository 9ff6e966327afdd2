#include "validate/host/mpi_pipeline_device.hpp"

#include <mpi.h>

#include <algorithm>
#include <deque>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>

#include "validate/host/host_pipeline_device.hpp"
#include "validate/host/host_rank.hpp"

namespace plumb {
namespace {

constexpr int kStampTag = 1, kDataTag = 2;

void check(int status, const char* what) {
  if (status != MPI_SUCCESS) throw std::runtime_error(fmt::format("{} failed (MPI error {})", what, status));
}

class MpiPipelineDevice final : public PipelineDevice {
 public:
  MpiPipelineDevice(const VirtualRun& run, int me, int processes) : run_(run), me_(me), processes_(processes), rank_(run, me) {}
  ~MpiPipelineDevice() override { complete_sends(); }

  DeviceIdentity identity() const override {
    return {fmt::format("{}, {} MPI processes", host_device_name(), processes_), fmt::format("libstdc++ {}", __GLIBCXX__), 0};
  }
  int units(int) const override { return 1; }

  void begin_step() override {
    clock_ = 0;
    owner_.clear();
    stamps_.clear();
  }

  Event record(int rank) override {
    owner_.push_back(rank);
    stamps_.push_back(rank == me_ ? clock_ : -std::numeric_limits<double>::infinity());
    return owner_.size() - 1;
  }

  void wait(int rank, Event e) override {
    const int owner = owner_.at(e);
    if (owner == rank) return;  // a stream's own events are behind it already
    if (owner == me_) {
      outbox_.push_back(stamps_[e]);
      isend(&outbox_.back(), 1, MPI_DOUBLE, rank, kStampTag);
    } else if (rank == me_) {
      double stamp = 0;
      check(MPI_Recv(&stamp, 1, MPI_DOUBLE, owner, kStampTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv(stamp)");
      stamps_[e] = stamp;
      clock_ = std::max(clock_, stamp);
    }
  }

  void launch(int rank, const KernelStep& k) override {
    if (rank == me_) clock_ += rank_.run(k);
  }

  void send(int rank, int to_rank, double bytes) override {
    const std::size_t message = HostRank::message_bytes(run_, rank, to_rank);
    if (rank == me_ && to_rank == me_) {
      clock_ += rank_.send_to(rank_.inbox(), bytes);  // a one-rank pipeline: to its own inbox
    } else if (rank == me_) {
      staging_.emplace_back(message / sizeof(std::uint16_t));
      clock_ += rank_.send_to(staging_.back(), bytes);
      isend(staging_.back().data(), static_cast<int>(message), MPI_BYTE, to_rank, kDataTag);
    } else if (to_rank == me_) {
      check(MPI_Recv(rank_.inbox().data(), static_cast<int>(message), MPI_BYTE, rank, kDataTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
            "MPI_Recv(activations)");
    }
  }

  void stream(int rank, double bytes) override {
    if (rank == me_) clock_ += rank_.stream(bytes);
  }

  // Every message of the step delivered; every process then knows every rank's stamps.
  void end_step() override {
    complete_sends();
    check(MPI_Allreduce(MPI_IN_PLACE, stamps_.data(), static_cast<int>(stamps_.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD),
          "MPI_Allreduce(stamps)");
  }

  double seconds(int, Event from, Event to) override { return stamps_.at(to) - stamps_.at(from); }

 private:
  void isend(const void* data, int count, MPI_Datatype type, int to, int tag) {
    requests_.emplace_back();
    check(MPI_Isend(data, count, type, to, tag, MPI_COMM_WORLD, &requests_.back()), "MPI_Isend");
  }

  void complete_sends() {
    if (!requests_.empty()) MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
    requests_.clear();
    outbox_.clear();
    staging_.clear();
  }

  const VirtualRun& run_;
  int me_, processes_;
  HostRank rank_;
  double clock_ = 0;
  std::vector<int> owner_;       // this step's events: the rank that recorded each
  std::vector<double> stamps_;   // and its clock then (−∞ until known here)
  std::deque<double> outbox_;    // stamps in flight (a deque: their addresses stay put)
  std::deque<std::vector<std::uint16_t>> staging_;  // activations in flight
  std::vector<MPI_Request> requests_;
};

}  // namespace

void mpi_finish() {
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (initialised && !finalised) MPI_Finalize();
}

int mpi_world_rank() {
  int initialised = 0, rank = 0;
  MPI_Initialized(&initialised);
  if (initialised) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

std::unique_ptr<PipelineDevice> make_mpi_pipeline_device(const VirtualRun& run) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) MPI_Init(nullptr, nullptr);
  int me = 0, processes = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &processes);
  if (processes != static_cast<int>(run.job.layout.pp))
    throw std::runtime_error(fmt::format("--mpi runs one process per pipeline rank: the run has {} ranks and MPI {} processes "
                                         "(mpirun -np {} ...)",
                                         run.job.layout.pp, processes, run.job.layout.pp));
  return std::make_unique<MpiPipelineDevice>(run, me, processes);
}

}  // namespace plumb
