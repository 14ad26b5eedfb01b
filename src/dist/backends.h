// The communication backends behind spore::dist::CommBackend (NOTE [Distributed training]).
#pragma once
#include <memory>

#include "spore/dist.h"

namespace spore::dist::detail {

// MPI on a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN (src/dist/mpi_backend.cc).
// MPI_Init_thread(MPI_THREAD_MULTIPLE, for the all-reduce thread) unless the program initialised MPI
// itself (NOTE [All-reduce on MPI's blocking path]).
std::unique_ptr<CommBackend> make_mpi_backend();

// A group of one process, no library: every collective is a copy (src/dist/self_backend.cc).
std::unique_ptr<CommBackend> make_self_backend();

// Element-wise dst = dst (op) src for `count` elements, in the dtype's own arithmetic; the
// rank-order reduction of both backends. kMean is a sum here (the group divides).
void reduce_into(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op);

// Points the collective ops' kernels at `group` (nullptr: back to a group of one);
// src/dist/collective_runtime.cc, called by init() and finalize() (NOTE [Collective ops]).
void install_collective_runtime(ProcessGroup* group);

}  // namespace spore::dist::detail
