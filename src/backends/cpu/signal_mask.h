// Keeping asynchronous signals away from threads that run oneDNN's JIT kernels
// (NOTE [Signals and kernels]).
#pragma once
#include <signal.h>

namespace spore::cpu {

// NOTE [Signals and kernels]
// oneDNN 2.6's JIT GEMM kernels (the f32 GEMM behind matmul, inner products and GEMM-based
// convolutions: the AVX2 one on CPUs without AVX-512 such as AMD Zen 3, the AVX-512 one on some
// shapes) point rsp into their heap workspace while they run. A signal delivered to such a thread
// has its frame (a few KB with the vector state) written below rsp, into the heap: glibc later
// aborts with "corrupted size vs. prev_size while consolidating", or a freed pointer is garbage.
// Any handled signal does it (Python's SIGINT handler, a profiler's SIGPROF); ignored and
// default-action signals are not delivered to a handler and are harmless. oneDNN fixed it upstream
// (issue 4845, 2026) after the version Debian 12 ships, so Spore keeps signals away instead:
// * the thread that calls a oneDNN primitive blocks every asynchronous signal for the duration of
//   the call (SignalsHeld); a signal sent meanwhile stays pending and is delivered when the call
//   returns, between two kernel calls, on the calling thread (Python's Ctrl-C flag is set then);
// * OpenMP's worker threads block them for good (block_signals_for_good): they never need a
//   signal, and a process-directed signal then always goes to a thread outside the kernels. A
//   worker blocks them at the start of each of Spore's parallel regions (once per thread); a worker
//   that libgomp creates during a oneDNN call inherits the caller's blocked mask; and before its
//   first oneDNN call with a team of N threads a thread runs one empty region of N that blocks them
//   in workers an earlier region (another library's) may have created (shield_openmp_team).
// Synchronous signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT) stay unblocked:
// they report a fault of the thread itself. tests/python/test_signals.py and
// tests/core/signal_mask_test.cc hold it to the truth.

// The asynchronous signals: every signal but the synchronous ones above.
const sigset_t& async_signals();

// Blocks the asynchronous signals on this thread while it lives; the destructor restores the
// previous mask, and a signal that arrived meanwhile is delivered then.
class SignalsHeld {
 public:
  SignalsHeld();
  ~SignalsHeld();
  SignalsHeld(const SignalsHeld&) = delete;
  SignalsHeld& operator=(const SignalsHeld&) = delete;

 private:
  sigset_t previous_;
};

// Blocks the asynchronous signals on this thread for good (one system call per thread). For
// OpenMP workers only, never for a thread that called into Spore.
void block_signals_for_good();

}  // namespace spore::cpu
