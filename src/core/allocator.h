// Host memory: the data of host-accessible tensors and the TensorImpl/Storage objects of every
// tensor (NOTE [Tensor allocation]), with caches so that the steady state of a training or inference
// loop makes no system calls and takes no page faults (NOTE [Host allocator]).
#pragma once
#include <cstddef>

namespace spore {

// This allocator is backend-neutral host memory, so it lives in the core (NOTE [Layers]): the
// CPU backend allocates tensor data with it, and the core allocates its tensor objects with it.

// NOTE [Host allocator]
// Small blocks (<= 64 KiB) come from per-thread free lists of power-of-two size classes: the
// eager add of two tiny tensors must cost tens of nanoseconds, not a malloc lock. Large blocks are
// rounded up to 1/8-octave classes and kept in one global cache (capped), because glibc's
// malloc returns big blocks to the kernel with munmap and the next step faults them in again
// (25-40% of an MLP training step on this machine). A request takes the smallest cached block that
// holds it, up to twice its size: a serving engine's batch changes every step, and with exact
// classes each new row count added blocks that the cache then kept (resident memory crept up for
// minutes under `spore serve`). All blocks are 64-byte aligned.
void* host_alloc(size_t bytes);
void host_free(void* ptr, size_t bytes);
// Bytes currently kept in the large-block cache (for tests and reports).
size_t host_cached_bytes();
// Returns every cached large block to the system.
void host_release_cache();


}  // namespace spore
