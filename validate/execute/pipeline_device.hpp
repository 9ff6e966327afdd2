#pragma once
// The machine plumb-validate run executes a pipeline schedule on, as the executor (executor.hpp) sees
// it: one in-order stream per pipeline rank, each on its own share of the machine, events recorded on a
// stream and waited for by another, the kernels a VirtualRun lists, copies of activations to a
// neighbour's inbox, and memory-bound passes. Two backends implement it: cuda (validate/gpu: green
// contexts, cuBLASLt, plumb's kernels, CUDA events) and host (validate/host: threads, Eigen, events as
// per-rank clocks). What runs when, on which stream, after what, is the executor's, shared by both.
#include <cstddef>
#include <stdexcept>
#include <string>

#include "validate/run/virtual_run.hpp"

namespace plumb {

// What a measured file records of the machine.
struct DeviceIdentity {
  std::string name;    // "NVIDIA H200", "host CPU (x86-64)"
  std::string driver;  // the CUDA driver, or the C++ library the host backend was built with
  double clock_mhz = 0;
};

class PipelineDevice {
 public:
  using Event = std::size_t;
  virtual ~PipelineDevice() = default;

  virtual DeviceIdentity identity() const = 0;
  // SMs (cuda) or cores (host) rank `rank`'s stream runs on.
  virtual int units(int rank) const = 0;

  // A step's start: every stream is held until the step's work is queued (cuda), or its clock set to
  // zero (host). Events of the previous step are forgotten.
  virtual void begin_step() = 0;
  // An event at this point of the rank's stream; done when everything queued on it before is.
  virtual Event record(int rank) = 0;
  // The rank's stream waits, before its next work, for an event of any stream.
  virtual void wait(int rank, Event e) = 0;
  virtual void launch(int rank, const KernelStep& k) = 0;
  // `bytes` of the rank's activations copied into `to_rank`'s inbox, on the sending rank's stream.
  virtual void send(int rank, int to_rank, double bytes) = 0;
  // A memory-bound pass that moves `bytes` in all (half read, half written): the optimizer's update.
  virtual void stream(int rank, double bytes) = 0;
  // The rank's weight gradients (`bytes`) all-reduced with its peers in the other data-parallel
  // replicas, on its stream. Only a device that runs replicas (the host backend's MPI processes) is
  // asked for it.
  virtual void reduce_gradients(int rank, double bytes) {
    (void)rank;
    (void)bytes;
    throw std::logic_error("this device runs one data-parallel replica: it has no gradients to all-reduce");
  }
  // Waits until every stream has done everything queued.
  virtual void end_step() = 0;
  // Seconds between two done events of one rank.
  virtual double seconds(int rank, Event from, Event to) = 0;
};

}  // namespace plumb
