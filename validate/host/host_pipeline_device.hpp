#pragma once
// The host backend of plumb-validate run: every pipeline rank a thread of its own running its stream's
// work in order (kernels from host_kernels), on buffers as plan_buffers sizes them. Time is each
// rank's clock: a kernel, copy or send advances it by the CPU time its thread spent on it
// (CLOCK_THREAD_CPUTIME_ID), an event stamps it, and a wait moves it to the awaited event's stamp when
// that is later. So a rank's clock is what the step would take with a core of its own per rank, as a
// GPU partition has its own SMs, whatever else the machine runs (ctest's other tests, more ranks than
// cores); wall time would count the other threads' turns. By default one kernel runs at a time
// (`exclusive`): each is timed on the machine as the bench timed it, not beside another rank's on the
// same core's other hardware thread, its caches or its share of the clock boost — on a 16-thread VM,
// ranks at once ran their GEMMs 20–37% slower than the bench did (2026-11-26).
#include <memory>

#include "validate/execute/pipeline_device.hpp"

namespace plumb {

std::unique_ptr<PipelineDevice> make_host_pipeline_device(const VirtualRun& run, bool exclusive = true);

// The name measured files record for this machine: "host CPU (x86_64, 2 threads)"; and, as its
// "driver", the C++ library the host backend was built with.
std::string host_device_name();
std::string host_software();

}  // namespace plumb
