// NOTE [Signals and kernels] in signal_mask.h.
#include "signal_mask.h"

#include <pthread.h>

#include <initializer_list>

namespace spore::cpu {

const sigset_t& async_signals() {
  static const sigset_t set = [] {
    sigset_t s;
    sigfillset(&s);
    for (int sync : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT}) sigdelset(&s, sync);
    return s;
  }();
  return set;
}

SignalsHeld::SignalsHeld() { pthread_sigmask(SIG_BLOCK, &async_signals(), &previous_); }

SignalsHeld::~SignalsHeld() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

void block_signals_for_good() {
  thread_local bool blocked = false;
  if (blocked) return;
  pthread_sigmask(SIG_BLOCK, &async_signals(), nullptr);
  blocked = true;
}

}  // namespace spore::cpu
