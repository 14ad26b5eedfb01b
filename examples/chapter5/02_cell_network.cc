// Sample 02_cell_network (chapter 5.5): a two-layer network Dense(4->8) -> ReLU -> Dense(8->2),
// run three ways: float32; with explicitly float16 parameters; and with to_float(float16) over
// float32 masters (the chapter's to_float ended in SIGSEGV or a hang at random; the harness runs
// this sample in its own process, so a crash is a recorded verdict, and run-all repeats it).
// Every result is checked against a float64 forward pass computed here from the parameters'
// values, not by Spore's kernels.
#include <algorithm>

#include "spore/nn/activation.h"
#include "spore/nn/cell.h"
#include "spore/nn/dense.h"
#include "spore/ops.h"
#include "spore/probe.h"

namespace {
using namespace spore;

// y = relu(x W1^T + b1) W2^T + b2, in float64 on the host.
std::vector<double> reference(nn::Dense& l1, nn::Dense& l2, const std::vector<double>& x, int rows) {
  auto w1 = probe::host_values(l1.weight().value()), b1 = probe::host_values(l1.bias().value());
  auto w2 = probe::host_values(l2.weight().value()), b2 = probe::host_values(l2.bias().value());
  std::vector<double> out;
  for (int r = 0; r < rows; ++r) {
    std::vector<double> h(8);
    for (int j = 0; j < 8; ++j) {
      double s = b1[j];
      for (int k = 0; k < 4; ++k) s += x[r * 4 + k] * w1[j * 4 + k];
      h[j] = std::max(0.0, s);
    }
    for (int j = 0; j < 2; ++j) {
      double s = b2[j];
      for (int k = 0; k < 8; ++k) s += h[k] * w2[j * 8 + k];
      out.push_back(s);
    }
  }
  return out;
}

void cell_network(probe::ProbeContext& ctx) {
  const Device dev = ctx.device();
  std::vector<double> xv = {0.5, -1.0, 2.0, 0.25, -0.75, 1.5, 0.0, -2.0, 1.0, 1.0, -1.0, 0.5};
  Tensor x32 = Tensor::from_vector<float>({xv.begin(), xv.end()}, Shape{3, 4}).to(dev);

  for (DType dtype : {DType::kFloat32, DType::kFloat16}) {
    auto l1 = std::make_shared<nn::Dense>(4, 8, true, nullptr, 7, dtype);
    auto l2 = std::make_shared<nn::Dense>(8, 2, true, nullptr, 8, dtype);
    nn::SequentialCell net({l1, std::make_shared<nn::ReLU>(), l2});
    Tensor y = net(cast(x32, dtype));
    std::string name = std::string("Dense-ReLU-Dense ") + dtype_name(dtype) + " parameters";
    ctx.compare(name, y, reference(*l1, *l2, xv, 3), dtype == DType::kFloat32 ? 1e-5 : 1e-2, 1e-2);
  }

  auto l1 = std::make_shared<nn::Dense>(4, 8, true, nullptr, 7);
  auto l2 = std::make_shared<nn::Dense>(8, 2, true, nullptr, 8);
  nn::SequentialCell net({l1, std::make_shared<nn::ReLU>(), l2});
  std::vector<double> want = reference(*l1, *l2, xv, 3);
  net.to_float(DType::kFloat16);
  for (int run = 0; run < 5; ++run) {  // repeated: the chapter's failure came at random
    Tensor y = net(x32);
    if (y.dtype() != DType::kFloat16) ctx.fail("to_float(float16) produced " + std::string(dtype_name(y.dtype())));
    ctx.compare("to_float(float16) run " + std::to_string(run), y, want, 1e-2, 1e-2);
  }
  if (l1->weight().value().dtype() != DType::kFloat32)
    ctx.fail("to_float changed the master parameters' dtype");
}
}  // namespace

SPORE_REGISTER_PROBE({"02_cell_network", "sample",
                      "Dense-ReLU-Dense in float32, float16 parameters, and to_float(float16) over float32 masters",
                      "", &cell_network});
