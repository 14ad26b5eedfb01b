// Sample check_env (chapter 5.2, check_mindspore_env.py): what runs, from where, and a minimal
// add on the device, in a child process, with the values read back.
#include "spore/ops.h"
#include "spore/probe.h"

namespace {
void check_env(spore::probe::ProbeContext& ctx) {
  using namespace spore;
  probe::Json env = probe::collect_env({});
  ctx.value("binary", env["binary"]["path"]);
  ctx.value("spore_version", env["binary"]["spore_version"]);
  ctx.value("git_commit", env["binary"]["git_commit"]);
  ctx.value("compiler", env["binary"]["compiler"]);
  ctx.value("blas", env["blas"]);
  ctx.value("cuda", env["cuda"]["status"]);
  ctx.value("shared_libraries", env["shared_libraries"]);
  // The device add probe: a result exists only once its values are back on the host.
  Tensor a = Tensor::from_vector<float>({1, 2, 3}, Shape{3}, ctx.device());
  Tensor b = Tensor::from_vector<float>({10, 20, 30}, Shape{3}, ctx.device());
  ctx.compare("device add float32", add(a, b), {11, 22, 33}, 0);
}
}  // namespace

SPORE_REGISTER_PROBE({"check_env", "sample", "environment, library paths and a minimal device add", "", &check_env});
