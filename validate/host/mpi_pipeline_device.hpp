#pragma once
// The host backend with one process per pipeline rank, as a cluster runs a pipeline (MPI builds only):
// `mpirun -np PP plumb-validate run SCENARIO --backend host --mpi`. Every process walks the executor's
// whole queue in the same order but does only its own rank's work: its kernels, its optimizer pass,
// and its sends — a timed copy of the activations into a staging buffer (what the in-process backend
// times for a send) and an MPI message carrying them into the next rank's inbox. An event another
// rank waits for travels as a message with its stamp (the owner's clock). Sends never block, and both
// ends of every message are at the same point of the shared queue, so no process waits in a cycle.
// After each step the stamps are shared (MPI_Allreduce), so every process reads the same timeline.
// With data-parallel replicas (`--dp D`, D × PP processes: process w is rank w mod PP of replica
// w / PP), each replica runs the pipeline and each rank all-reduces its weight gradients with its
// peers, a real MPI_Allreduce checked for its sum.
#include <memory>

#include "validate/execute/pipeline_device.hpp"

namespace plumb {

// Initialises MPI if it is not yet. Throws std::runtime_error unless there is exactly one process per
// pipeline rank and replica.
std::unique_ptr<PipelineDevice> make_mpi_pipeline_device(const VirtualRun& run);
// This process's rank in MPI_COMM_WORLD (0 without MPI initialised).
int mpi_world_rank();
// MPI_Finalize, where MPI was initialised and is not finalised yet.
void mpi_finish();

}  // namespace plumb
