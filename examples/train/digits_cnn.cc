// Trains the small CNN of examples/common/digits_cnn.h on scikit-learn's 8x8 digits and reports
// the test accuracy (the example of issue 3; it needs `python3-sklearn`, which
// scripts/install-deps.sh installs, for the data file).
//   build/release/bin/examples/digits_cnn [--epochs 20] [--batch 32] [--lr 0.002] [--seed 0]
//       [--data PATH] [--curve PREFIX]    (PREFIX.csv and PREFIX.svg: the loss curve)
// Exit status 0 when the test accuracy reaches --min-accuracy (default 0.95), 1 otherwise.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>

#include "common/digits_cnn.h"
#include "spore/error.h"
#include "spore/train.h"

int main(int argc, char** argv) {
  using namespace spore;
  CLI::App app{"Train a small CNN on the 8x8 digits of scikit-learn's Debian package"};
  examples::DigitsTrainOptions o;
  std::string path = examples::kDigitsPath, curve_prefix;
  double min_accuracy = 0.95;
  app.add_option("--epochs", o.epochs, "passes over the training set")->check(CLI::PositiveNumber);
  app.add_option("--batch", o.batch, "batch size")->check(CLI::PositiveNumber);
  app.add_option("--lr", o.lr, "Adam learning rate")->check(CLI::PositiveNumber);
  app.add_option("--seed", o.seed, "seed of the weights, the split and the shuffles");
  app.add_option("--data", path, "digits.csv.gz");
  app.add_option("--curve", curve_prefix, "write the loss curve to PREFIX.csv and PREFIX.svg");
  app.add_option("--min-accuracy", min_accuracy, "exit status 1 below this test accuracy");
  CLI11_PARSE(app, argc, argv);
  try {
    examples::DigitsSplit split = examples::load_digits(path, 0.2, o.seed);
    std::printf("digits: %lld training and %lld test images from %s\n",
                (long long)split.train_labels.numel(), (long long)split.test_labels.numel(), path.c_str());
    auto net = examples::make_digits_cnn(o.seed);
    const auto t0 = std::chrono::steady_clock::now();
    double last_loss = 0;
    const int64_t per_epoch = (split.train_labels.numel() + o.batch - 1) / o.batch;
    // A progress line on a terminal, plain log lines otherwise (NOTE [Progress output]).
    train::ProgressReporter progress(per_epoch * o.epochs, std::cout);
    train::LossCurve curve;
    examples::train_digits_cnn(*net, split, o, [&](int64_t step, int64_t total, int epoch, double loss) {
      last_loss = loss;
      progress.update(step + 1, loss);
      std::map<std::string, double> extra;
      if ((step + 1) % per_epoch == 0 || step + 1 == total)  // test accuracy once per epoch
        extra["test_accuracy"] = examples::digits_accuracy(*net, split.test_images, split.test_labels);
      (void)epoch;
      curve.record(step + 1, loss, extra);
    });
    progress.finish();
    if (!curve_prefix.empty()) {
      curve.write_csv(curve_prefix + ".csv");
      train::SvgOptions svg;
      svg.log_y = true;
      svg.series = {"test_accuracy"};
      curve.write_svg(curve_prefix + ".svg", "digits CNN: training loss per step, test accuracy per epoch", svg);
      std::printf("loss curve: %s.csv, %s.svg\n", curve_prefix.c_str(), curve_prefix.c_str());
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double acc = examples::digits_accuracy(*net, split.test_images, split.test_labels);
    const double train_acc = examples::digits_accuracy(*net, split.train_images, split.train_labels);
    std::printf("trained %d epochs in %.2f s; final loss %.5f; train accuracy %.4f; test accuracy %.4f (%s %.2f)\n",
                o.epochs, seconds, last_loss, train_acc, acc, acc >= min_accuracy ? ">=" : "<", min_accuracy);
    return acc >= min_accuracy ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "digits_cnn: %s\n", e.what());
    return 2;
  }
}
