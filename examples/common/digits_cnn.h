// The small CNN the digits example trains, and its training loop (shared by the example program,
// its test and its benchmark).
//
// Network (input [N, 1, 8, 8]):
//   Conv2d(1, 16, 3, same) -> ReLU -> MaxPool2d(2)   -> [N, 16, 4, 4]
//   Conv2d(16, 32, 3, same) -> ReLU -> MaxPool2d(2)  -> [N, 32, 2, 2]
//   Flatten -> Dense(128, 10)                        -> logits
// Loss: cross-entropy; optimizer: Adam. Batches come through the dataset pipeline
// (generator -> shuffle -> batch -> repeat), so every epoch sees a new order from a fixed seed.
#pragma once
#include <chrono>
#include <functional>
#include <memory>

#include "common/digits.h"
#include "spore/autograd.h"
#include "spore/nn/activation.h"
#include "spore/nn/cell.h"
#include "spore/nn/conv.h"
#include "spore/nn/dense.h"
#include "spore/nn/losses.h"
#include "spore/optim.h"

namespace spore::examples {

inline std::shared_ptr<nn::SequentialCell> make_digits_cnn(uint64_t seed) {
  auto conv = [&](int64_t in, int64_t out, uint64_t s) {
    nn::Conv2dConfig c;
    c.has_bias = true;
    c.seed = s;
    return std::make_shared<nn::Conv2d>(in, out, std::vector<int64_t>{3, 3}, c);
  };
  return std::make_shared<nn::SequentialCell>(std::vector<nn::CellPtr>{
      conv(1, 16, seed + 1), std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(std::vector<int64_t>{2, 2}),
      conv(16, 32, seed + 2), std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(std::vector<int64_t>{2, 2}),
      std::make_shared<nn::Flatten>(), std::make_shared<nn::Dense>(128, 10, true, nullptr, seed + 3)});
}

struct DigitsTrainOptions {
  int epochs = 20;
  int64_t batch = 32;
  double lr = 2e-3;
  uint64_t seed = 0;
};

// Fraction of `images` whose argmax class equals the label (evaluation mode, no tape).
inline double digits_accuracy(nn::Cell& net, const Tensor& images, const Tensor& labels) {
  NoGradGuard no_grad;
  net.set_train(false);
  Tensor pred = argmax(net(images), 1);
  net.set_train(true);
  return sum(cast(eq(pred, labels), DType::kFloat64)).item<double>() / (double)labels.numel();
}

// Trains `net` on split.train_*; on_step(step, total_steps, epoch, loss) after every step.
inline void train_digits_cnn(nn::Cell& net, const DigitsSplit& split, const DigitsTrainOptions& o,
                             const std::function<void(int64_t, int64_t, int, double)>& on_step = {}) {
  const int64_t n = split.train_images.shape()[0];
  const Tensor images = split.train_images, labels = split.train_labels;
  data::Dataset ds = data::GeneratorDataset(
                         [images, labels](int64_t i) {
                           return data::Row{reshape(slice(images, 0, i, i + 1), {1, 8, 8}),
                                            reshape(slice(labels, 0, i, i + 1), {})};
                         },
                         n, {"image", "label"})
                         .shuffle(n, o.seed)
                         .batch(o.batch, /*drop_remainder=*/false)
                         .repeat(o.epochs);
  const int64_t per_epoch = (n + o.batch - 1) / o.batch;
  const int64_t total = per_epoch * o.epochs;

  optim::Adam opt(net.trainable_params(), o.lr);
  auto loss_fn = [&net](const std::vector<Tensor>& in) { return nn::cross_entropy(net(in[0]), in[1]); };
  auto grad_fn = value_and_grad(loss_fn, GradPosition::none(), net.trainable_params());
  net.set_train(true);
  int64_t step = 0;
  auto it = ds.create_tuple_iterator();
  while (auto batch = it.next()) {
    ValueAndGrad vg = grad_fn({(*batch)[0], (*batch)[1]});
    opt(vg.weight_grads);
    if (on_step) on_step(step, total, (int)(step / per_epoch), vg.value.item<double>());
    ++step;
  }
}

}  // namespace spore::examples
