// NOTE [Passive OpenMP in the CLI]
// Spore's own kernels run on its pool, whose idle workers sleep after a short spin (NOTE [Threads
// that sleep], src/backends/cpu/thread_pool.cc), in every program. oneDNN (float32 GEMMs,
// convolutions) still runs on libgomp, whose idle workers spin for as long as OMP_WAIT_POLICY
// says; libgomp reads it once, when it is loaded, before main. So every `spore` command (not only
// serve, as before) re-executes itself once with OMP_WAIT_POLICY=passive when the user has chosen
// no policy (OMP_WAIT_POLICY or GOMP_SPINCOUNT set: kept as given). On a 2-core machine under
// load, 32 streaming clients of `spore serve`: 0.7 tokens/s and timeouts with spinning, 10.7
// tokens/s with passive; `spore generate` beside two compiler processes: 1-13 tokens/s against
// 20-30 (issue 28).
#pragma once

namespace spore::cli {

// Re-executes /proc/self/exe with the same arguments and OMP_WAIT_POLICY=passive added, unless
// OMP_WAIT_POLICY or GOMP_SPINCOUNT is already set. Returns (going on with the default policy)
// only when it cannot (no /proc).
void reexec_with_passive_openmp(char** argv);

}  // namespace spore::cli
