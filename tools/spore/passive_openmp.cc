// NOTE [Passive OpenMP in the CLI] (passive_openmp.h).
#include "passive_openmp.h"

#include <unistd.h>

#include <cstdlib>

namespace spore::cli {

void reexec_with_passive_openmp(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  setenv("OMP_WAIT_POLICY", "passive", 1);
  execv("/proc/self/exe", argv);
  // execv failed (no /proc): go on with libgomp's default policy, as the environment says.
  unsetenv("OMP_WAIT_POLICY");
}

}  // namespace spore::cli
