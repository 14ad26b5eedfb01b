// The chapter's third practice task (chapter 5, "实践任务" 3): a binary classifier built from
// its Fp16Linear layer (explicit float16 parameters, x @ W + b through matmul), trained once
// eagerly (PyNative) and once with the whole training step compiled (Graph mode), to compare the
// two loss curves. Shared by examples/train/fp16_classifier.cc and tests/graph.
//
// Data: 256 points x ~ N(0, 1)^4 (Philox, seed 7), label 1 when x . [1, -1, 0.5, 0.25] > 0, in
// float16. Network: Fp16Linear(4, 8) -> ReLU -> Fp16Linear(8, 1), weights ~ N(0, 0.1) (seeds 1
// and 2), zero biases; loss: binary cross-entropy with logits; Adam (lr 0.05), full batch.
#pragma once
#include <memory>
#include <vector>

#include "spore/autograd.h"
#include "spore/jit.h"
#include "spore/nn/activation.h"
#include "spore/nn/cell.h"
#include "spore/nn/losses.h"
#include "spore/ops.h"
#include "spore/optim.h"

namespace spore::examples {

// The chapter's Fp16Linear: weight [in, out] and bias [out] held in float16 by the layer itself.
class Fp16Linear final : public nn::Cell {
 public:
  Fp16Linear(int64_t in_dim, int64_t out_dim, uint64_t seed)
      : weight_(register_parameter("weight", cast(random_normal({in_dim, out_dim}, seed, 0, 0.1), DType::kFloat16))),
        bias_(register_parameter("bias", zeros({out_dim}, DType::kFloat16))) {}
  Tensor construct(const Tensor& x) override { return add(matmul(x, weight_.value()), bias_.value()); }
  std::string name() const override { return "Fp16Linear"; }

 private:
  Parameter weight_;  // handles: they share state with the registered ones
  Parameter bias_;
};

inline std::shared_ptr<nn::SequentialCell> make_fp16_classifier() {
  return std::make_shared<nn::SequentialCell>(std::vector<nn::CellPtr>{
      std::make_shared<Fp16Linear>(4, 8, 1), std::make_shared<nn::ReLU>(), std::make_shared<Fp16Linear>(8, 1, 2)});
}

struct ClassifierData {
  Tensor x, y;                   // float16 [256, 4], [256, 1]
  std::vector<double> labels;    // the same labels (0 or 1)
};

inline ClassifierData make_classifier_data() {
  ClassifierData d;
  Tensor x = cast(random_normal({256, 4}, 7), DType::kFloat16);
  const std::vector<double> xv = cast(x, DType::kFloat64).to_vector<double>();
  const double w[4] = {1, -1, 0.5, 0.25};
  for (int r = 0; r < 256; ++r) {
    double s = 0;
    for (int k = 0; k < 4; ++k) s += xv[r * 4 + k] * w[k];
    d.labels.push_back(s > 0 ? 1.0 : 0.0);
  }
  d.x = x;
  d.y = cast(Tensor::from_vector(d.labels, Shape{256, 1}), DType::kFloat16);
  return d;
}

struct ClassifierRun {
  std::vector<double> losses;  // per step, before its update
  double accuracy = 0;         // on the training points after the last step
  JitStats jit;                // graph mode only
};

// `steps` Adam steps; graph mode compiles the whole step (forward, backward, update) with jit.
inline ClassifierRun train_fp16_classifier(const ClassifierData& d, int steps, bool graph_mode) {
  auto net = make_fp16_classifier();
  optim::Adam opt(net->trainable_params(), 0.05);
  auto loss_fn = [&](const std::vector<Tensor>& in) {
    return nn::binary_cross_entropy_with_logits((*net)(in[0]), in[1]);
  };
  auto grad_fn = value_and_grad(loss_fn, GradPosition::none(), net->trainable_params());
  TensorFn step = [&](const std::vector<Tensor>& in) {
    ValueAndGrad vg = grad_fn(in);
    opt(vg.weight_grads);
    return vg.value;
  };
  JitFunction compiled = jit(step, JitOptions{.name = "fp16_classifier_step"});
  ClassifierRun run;
  for (int s = 0; s < steps; ++s)
    run.losses.push_back((graph_mode ? compiled.call1({d.x, d.y}) : step({d.x, d.y})).item<double>());
  const std::vector<double> logits = cast((*net)(d.x), DType::kFloat64).to_vector<double>();
  int right = 0;
  for (size_t r = 0; r < logits.size(); ++r) right += (logits[r] > 0) == (d.labels[r] > 0.5);
  run.accuracy = (double)right / (double)logits.size();
  run.jit = compiled.stats();
  return run;
}

}  // namespace spore::examples
