// spore._spore.dist where this build has no MPI (spore_dist not built): the submodule exists and
// says so, so spore.communication can name the fix instead of failing on a missing attribute.
#include "spore/bindings.h"

namespace spore::py_bind {

void bind_dist(pybind11::module_& root) {
  pybind11::module_ m = root.def_submodule("dist", "collectives (not built: no MPI)");
  m.attr("available") = false;
  m.attr("reason") =
      "this Spore was built without MPI, so it has no collectives: install Open MPI "
      "(scripts/install-deps.sh: libopenmpi-dev openmpi-bin) and rebuild";
}

}  // namespace spore::py_bind
