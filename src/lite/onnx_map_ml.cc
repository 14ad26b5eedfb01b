// ai.onnx.ml ops that are plain tensor arithmetic (NOTE [ONNX If at run time], contrib domains):
// Binarizer (x > threshold, in x's type) and ArrayFeatureExtractor (x's last axis gathered at the
// flattened indices; a 1-D x gives one row, as ONNX Runtime and the reference do); and the default
// domain's TfIdfVectorizer over integer tokens known when the graph is mapped (a constant, or
// predict's inputs), counted then as the spec's n-gram walk counts them. The tree ensembles and
// string tokens are not mapped.
#include <map>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

std::vector<uint32_t> binarizer(NodeCtx& c) {
  Mapper& m = c.m;
  const uint32_t x = c.at(0);
  const DType t = m.dtype(x);
  const uint32_t above = m.emit(c, OpId::k_gt, {x, m.scalar(c.f("threshold", 0.0), t)});
  return {m.cast_to(c, above, t)};
}

std::vector<uint32_t> array_feature_extractor(NodeCtx& c) {
  Mapper& m = c.m;
  uint32_t x = c.at(0);
  const Shape xs = m.shape(x);
  if (xs.ndim() < 1) c.bad("X must have at least one axis");
  const int64_t n = m.shape(c.at(1)).numel();
  const uint32_t index = m.reshape(c, m.cast_to(c, c.at(1), DType::kInt64), {n});
  const uint32_t y = m.emit(c, OpId::k_index_select, {x, index}, Attrs::of((int64_t)(xs.ndim() - 1)));
  if (xs.ndim() == 1) return {m.reshape(c, y, {1, n})};
  return {y};
}

std::vector<uint32_t> tfidf_vectorizer(NodeCtx& c) {
  Mapper& m = c.m;
  if (!c.strings("pool_strings").empty()) c.unsupported("TfIdfVectorizer over strings");
  const uint32_t x = c.at(0);
  const Shape xs = m.shape(x);
  if (xs.ndim() > 2) c.bad("X must be 1-D [C] or 2-D [B, C]");
  if (xs.numel() > kMaxKnownElements) c.unsupported("TfIdfVectorizer over 4,096 tokens (it runs when the graph is mapped)");
  const std::vector<int64_t> tokens = m.int_data(c, x, "input (TfIdfVectorizer runs when the graph is mapped)");
  const int64_t min_n = c.i("min_gram_length", 1), max_n = c.i("max_gram_length", 1), skip = c.i("max_skip_count", 0);
  const std::vector<int64_t> counts = c.ints("ngram_counts"), indexes = c.ints("ngram_indexes"), pool = c.ints("pool_int64s");
  const std::vector<double> weights = c.floats("weights");
  const std::string mode = c.s("mode", "TF");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") c.bad("mode '" + mode + "'");
  if (min_n < 1 || max_n < min_n || skip < 0 || indexes.empty()) c.bad("the n-gram lengths, skip count or ngram_indexes are out of range");
  int64_t width = 0;
  for (int64_t i : indexes) {
    if (i < 0) c.bad("ngram_indexes holds a negative index");
    width = std::max(width, i + 1);
  }
  if (!weights.empty() && (int64_t)weights.size() < width) c.bad("weights has fewer values than the output has columns");
  // n-gram -> its 1-based id in the pool's order (ids of lengths outside [min, max] skipped).
  std::map<std::vector<int64_t>, int64_t> ids;
  int64_t id = 1;
  for (size_t k = 0; k < counts.size(); ++k) {
    const int64_t n = (int64_t)k + 1, begin = counts[k], end = k + 1 < counts.size() ? counts[k + 1] : (int64_t)pool.size();
    if (begin < 0 || end < begin || end > (int64_t)pool.size()) c.bad("ngram_counts does not fit pool_int64s");
    const int64_t grams = (end - begin) / n;
    for (int64_t g = 0; g < grams; ++g, ++id)
      if (n >= min_n && n <= max_n) ids[std::vector<int64_t>(pool.begin() + begin + g * n, pool.begin() + begin + (g + 1) * n)] = id;
  }
  const int64_t rows = xs.ndim() == 2 ? xs[0] : 1, row = xs.ndim() == 0 ? 1 : xs[xs.ndim() - 1];
  std::vector<double> freq((size_t)(rows * width), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t* t = tokens.data() + r * row;
    int64_t start_n = min_n;
    for (int64_t d = 1; d <= skip + 1; ++d) {
      for (int64_t s0 = 0; s0 + d * (start_n - 1) < row; ++s0) {
        std::vector<int64_t> gram;
        for (int64_t n = 1, at = s0; n <= max_n && at < row; ++n, at += d) {
          gram.push_back(t[at]);
          auto hit = ids.find(gram);
          if (n >= start_n && hit != ids.end()) {
            if (hit->second - 1 >= (int64_t)indexes.size()) c.bad("ngram_indexes has fewer entries than the pool has n-grams");
            freq[(size_t)(r * width + indexes[(size_t)hit->second - 1])] += 1;
          }
        }
      }
      if (start_n == 1 && ++start_n > max_n) break;  // unigrams count once, at distance 1
    }
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < width; ++i) {
      double& f = freq[(size_t)(r * width + i)];
      if (mode == "IDF") f = f > 0 ? (weights.empty() ? 1.0 : weights[(size_t)i]) : 0.0;
      else if (mode == "TFIDF" && !weights.empty()) f *= weights[(size_t)i];
    }
  const Shape out = xs.ndim() == 2 ? Shape{rows, width} : Shape{width};
  return {m.constant(dispatch1(OpId::k_cast, {Tensor::from_vector(freq, out)}, Attrs::of(DType::kFloat32)))};
}

}  // namespace

void add_ml_ops(HandlerTable& t) {
  t["TfIdfVectorizer"] = tfidf_vectorizer;
  t["ai.onnx.ml/Binarizer"] = binarizer;
  t["ai.onnx.ml/ArrayFeatureExtractor"] = array_feature_extractor;
}

}  // namespace spore::onnx::detail
