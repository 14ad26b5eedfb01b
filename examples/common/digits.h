// The 8x8 handwritten digits data set that scikit-learn's Debian package ships
// (python3-sklearn: /usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz, the UCI
// "optdigits" test set): 1797 images of 8x8 pixels with values 0..16, one label 0..9 per image,
// one row of 65 integers per image. Split here with a fixed seed into a training and a test set.
#pragma once
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "spore/data.h"
#include "spore/ops.h"

namespace spore::examples {

inline const char* kDigitsPath = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";

struct DigitsSplit {
  Tensor train_images;  // float32 [n, 1, 8, 8], pixels scaled to [0, 1]
  Tensor train_labels;  // int64 [n]
  Tensor test_images;
  Tensor test_labels;
};

// Reads the file with Spore's CSV reader (which inflates gzip) and holds out `test_fraction` of
// the images, chosen by a permutation drawn from `seed` (std::mt19937_64, so the split is the same
// on every machine).
inline DigitsSplit load_digits(const std::string& path, double test_fraction, uint64_t seed) {
  data::CsvOptions opts;
  opts.header = false;
  opts.columns = {{"image", DType::kFloat32, 64}, {"label", DType::kInt64, 0}};
  std::vector<Tensor> images, labels;
  auto it = data::CsvSource(path, opts).create_tuple_iterator();
  while (auto row = it.next()) {
    images.push_back((*row)[0]);
    labels.push_back((*row)[1]);
  }
  const int64_t n = (int64_t)images.size();
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 gen(seed);
  for (int64_t i = n - 1; i > 0; --i)  // Fisher-Yates, spelled out: std::shuffle varies by library
    std::swap(order[i], order[(int64_t)(gen() % (uint64_t)(i + 1))]);
  const int64_t n_test = (int64_t)(n * test_fraction);
  auto take = [&](int64_t from, int64_t to, Tensor& x, Tensor& y) {
    std::vector<Tensor> xs, ys;
    for (int64_t i = from; i < to; ++i) {
      xs.push_back(images[order[i]]);
      ys.push_back(labels[order[i]]);
    }
    x = reshape(div(stack(xs), 16.0), {to - from, 1, 8, 8});
    y = stack(ys);
  };
  DigitsSplit s;
  take(n_test, n, s.train_images, s.train_labels);
  take(0, n_test, s.test_images, s.test_labels);
  return s;
}

}  // namespace spore::examples
