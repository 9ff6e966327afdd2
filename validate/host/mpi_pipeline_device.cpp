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
constexpr int kReductionRuns = 5;

void check(int status, const char* what) {
  if (status != MPI_SUCCESS) throw std::runtime_error(fmt::format("{} failed (MPI error {})", what, status));
}

class MpiPipelineDevice final : public PipelineDevice {
 public:
  MpiPipelineDevice(const VirtualRun& run, int me, int replica, int processes, MPI_Comm pipeline, MPI_Comm replicas)
      : run_(run), me_(me), replica_(replica), processes_(processes), pipeline_(pipeline), replicas_(replicas), rank_(run, me) {
    gradients_.resize(static_cast<std::size_t>(run.gradient_bytes[static_cast<std::size_t>(me)] / sizeof(float)));
  }
  ~MpiPipelineDevice() override {
    complete_sends();
    MPI_Comm_free(&pipeline_);
    MPI_Comm_free(&replicas_);
  }

  DeviceIdentity identity() const override {
    const std::int64_t dp = run_.job.layout.dp;
    return {dp > 1 ? fmt::format("{}, {} MPI processes ({} ranks × {} replicas)", host_device_name(), processes_, run_.job.layout.pp, dp)
                   : fmt::format("{}, {} MPI processes", host_device_name(), processes_),
            host_software(), 0};
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
      check(MPI_Recv(&stamp, 1, MPI_DOUBLE, owner, kStampTag, pipeline_, MPI_STATUS_IGNORE), "MPI_Recv(stamp)");
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
      check(MPI_Recv(rank_.inbox().data(), static_cast<int>(message), MPI_BYTE, rank, kDataTag, pipeline_, MPI_STATUS_IGNORE),
            "MPI_Recv(activations)");
    }
  }

  void stream(int rank, double bytes) override {
    if (rank == me_) clock_ += rank_.stream(bytes);
  }

  // A real MPI_Allreduce (sum) of the rank's gradients with its peers in the other replicas. It
  // starts when the last of them is ready (their clocks' maximum) and lasts what it takes them in
  // wall time, measured between barriers so that no peer's lateness counts, and the fastest of
  // kReductionRuns runs: where the machine has fewer cores than processes, the other ranks' turns on
  // its cores would otherwise count. Each replica adds its number + 1, so the sum shows whether every
  // element arrived from every replica.
  void reduce_gradients(int rank, double) override {
    if (rank != me_) return;
    double ready = clock_, fastest = std::numeric_limits<double>::infinity();
    check(MPI_Allreduce(MPI_IN_PLACE, &ready, 1, MPI_DOUBLE, MPI_MAX, replicas_), "MPI_Allreduce(clocks)");
    int replicas = 1;
    MPI_Comm_size(replicas_, &replicas);
    const float sum = static_cast<float>(replicas * (replicas + 1) / 2);
    for (int run = 0; run < kReductionRuns; ++run) {
      std::fill(gradients_.begin(), gradients_.end(), static_cast<float>(replica_ + 1));
      check(MPI_Barrier(replicas_), "MPI_Barrier");
      const double t0 = MPI_Wtime();
      check(MPI_Allreduce(MPI_IN_PLACE, gradients_.data(), static_cast<int>(gradients_.size()), MPI_FLOAT, MPI_SUM, replicas_),
            "MPI_Allreduce(gradients)");
      double took = MPI_Wtime() - t0;
      check(MPI_Allreduce(MPI_IN_PLACE, &took, 1, MPI_DOUBLE, MPI_MAX, replicas_), "MPI_Allreduce(duration)");
      fastest = std::min(fastest, took);
      if (std::any_of(gradients_.begin(), gradients_.end(), [&](float g) { return g != sum; }))
        throw std::runtime_error(fmt::format("rank {}: the gradient all-reduce over {} replicas did not sum to {} everywhere", me_, replicas, sum));
    }
    clock_ = ready + fastest;
  }

  // Every message of the step delivered; every process then knows every rank's stamps.
  void end_step() override {
    complete_sends();
    check(MPI_Allreduce(MPI_IN_PLACE, stamps_.data(), static_cast<int>(stamps_.size()), MPI_DOUBLE, MPI_MAX, pipeline_),
          "MPI_Allreduce(stamps)");
  }

  double seconds(int, Event from, Event to) override { return stamps_.at(to) - stamps_.at(from); }

 private:
  void isend(const void* data, int count, MPI_Datatype type, int to, int tag) {
    requests_.emplace_back();
    check(MPI_Isend(data, count, type, to, tag, pipeline_, &requests_.back()), "MPI_Isend");
  }

  void complete_sends() {
    if (!requests_.empty()) MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
    requests_.clear();
    outbox_.clear();
    staging_.clear();
  }

  const VirtualRun& run_;
  int me_, replica_, processes_;
  MPI_Comm pipeline_, replicas_;  // this replica's ranks; this rank's peers in every replica
  HostRank rank_;
  std::vector<float> gradients_;
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
  int world = 0, processes = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world);
  MPI_Comm_size(MPI_COMM_WORLD, &processes);
  const auto pp = static_cast<int>(run.job.layout.pp), dp = static_cast<int>(run.job.layout.dp);
  if (processes != pp * dp)
    throw std::runtime_error(fmt::format("--mpi runs one process per pipeline rank and replica: the run has {} ranks × {} replicas "
                                         "and MPI {} processes (mpirun -np {} ...)",
                                         pp, dp, processes, pp * dp));
  // Process w is rank w mod PP of replica w / PP.
  MPI_Comm pipeline = MPI_COMM_NULL, replicas = MPI_COMM_NULL;
  check(MPI_Comm_split(MPI_COMM_WORLD, world / pp, world % pp, &pipeline), "MPI_Comm_split(pipeline)");
  check(MPI_Comm_split(MPI_COMM_WORLD, world % pp, world / pp, &replicas), "MPI_Comm_split(replicas)");
  return std::make_unique<MpiPipelineDevice>(run, world % pp, world / pp, processes, pipeline, replicas);
}

}  // namespace plumb
