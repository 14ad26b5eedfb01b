// Sample 01_tensor_ops (chapter 5.4): add float32; matmul float32; matmul float16 giving
// [[7, 10], [15, 22]]; the device float16 result against the CPU float32 result within 1e-2.
// Every check reads values back: the chapter's shape-only checks passed where the ops failed.
#include "spore/ops.h"
#include "spore/probe.h"

namespace {
void tensor_ops(spore::probe::ProbeContext& ctx) {
  using namespace spore;
  const Device dev = ctx.device();
  Tensor a32 = Tensor::from_vector<float>({1, 2, 3, 4}, Shape{2, 2}, dev);
  Tensor b32 = Tensor::from_vector<float>({5, 6, 7, 8}, Shape{2, 2}, dev);
  ctx.compare("add float32", add(a32, b32), {6, 8, 10, 12}, 0);
  ctx.compare("matmul float32", matmul(a32, a32), {7, 10, 15, 22}, 1e-6);

  Tensor a16 = Tensor::from_vector<Half>({Half(1.f), Half(2.f), Half(3.f), Half(4.f)}, Shape{2, 2}, dev);
  Tensor m16 = matmul(a16, a16);
  ctx.compare("matmul float16", m16, {7, 10, 15, 22}, 0);
  // The CPU float32 result as the reference of the device float16 one.
  Tensor cpu = Tensor::from_vector<float>({1, 2, 3, 4}, Shape{2, 2}, Device::cpu());
  std::vector<double> ref = probe::host_values(matmul(cpu, cpu));
  ctx.compare("matmul float16 vs CPU float32", m16, ref, 1e-2);
}
}  // namespace

SPORE_REGISTER_PROBE({"01_tensor_ops", "sample", "add f32, matmul f32, matmul f16 = [[7,10],[15,22]] vs CPU f32", "",
                      &tensor_ops});
