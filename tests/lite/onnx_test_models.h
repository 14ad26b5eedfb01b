// The networks the ONNX export is checked on (NOTE [ONNX]): fixed-seed weights, fixed-seed
// inputs. tests/lite/onnx_export_models.cc exports them with the inputs; tools/onnx_check.py
// runs the files in ONNX Runtime and commits the outputs; tests/lite/onnx_export_test.cc
// compares the framework's eager outputs and Lite's on the committed files with them.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "lite/onnx_smoke_models.h"
#include "spore/export.h"
#include "spore/op_registry.h"
#include "spore/ops.h"

namespace spore::onnx_models {

struct ExportCase {
  std::string name;
  TensorsFn fn;
  std::vector<Tensor> inputs;
  ExportOptions options;
  // ONNX Runtime against Spore: 1e-5, or 1e-4 for MobileNetV2 (issue 10 item 6: 52 layers of
  // float32 convolutions summed in different orders).
  double ort_tolerance = 1e-5;
  bool small = true;  // false: model.onnx is not committed (the test exports it again)
};

inline Tensor weight(std::vector<int64_t> shape, uint64_t seed, double scale = 0.3) {
  return random_normal(shape, seed, 0.0, scale);
}

inline std::vector<ExportCase> export_cases() {
  std::vector<ExportCase> out;
  {  // a two-layer perceptron with a softmax head
    Tensor w1 = weight({8, 16}, 11), b1 = weight({16}, 12), w2 = weight({16, 5}, 13), b2 = weight({5}, 14);
    TensorsFn fn = [=](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{softmax(add(matmul(relu(add(matmul(in[0], w1), b1)), w2), b2), -1)};
    };
    out.push_back({"mlp", fn, {random_uniform({4, 8}, 21, -2, 2)}, {}});
    // The same with a symbolic batch: a dim_param in the ONNX file.
    out.push_back({"mlp_dynamic_batch", fn, {random_uniform({3, 8}, 22, -2, 2)}, ExportOptions().dynamic_axis(0, 0, "batch")});
  }
  {  // a small CNN: conv + bias, relu6, max pool, depthwise conv, avg pool, global pool, dense
    Tensor c1 = weight({8, 3, 3, 3}, 31), cb = weight({8}, 32), dw = weight({8, 1, 3, 3}, 33), fc = weight({8, 4}, 34);
    TensorsFn fn = [=](const std::vector<Tensor>& in) {
      Conv2dOptions same;
      same.padding = {1, 1};
      Tensor x = relu6(add(conv2d(in[0], c1, same), reshape(cb, {8, 1, 1})));
      Pool2dOptions mp;
      mp.kernel = {2, 2};
      x = max_pool2d(x, mp);
      Conv2dOptions depthwise;
      depthwise.padding = {1, 1};
      depthwise.stride = {2, 2};
      depthwise.groups = 8;
      x = conv2d(x, dw, depthwise);
      Pool2dOptions ap;
      ap.kernel = {3, 3};
      ap.stride = {1, 1};
      ap.padding = {1, 1};
      x = avg_pool2d(x, ap);
      x = reshape(adaptive_avg_pool2d(x, {1, 1}), {-1, 8});
      return std::vector<Tensor>{log_softmax(matmul(x, fc), 1)};
    };
    out.push_back({"cnn", fn, {random_uniform({2, 3, 12, 12}, 41, -1, 1)}, {}});
  }
  {  // elementwise activations and reductions
    TensorsFn fn = [](const std::vector<Tensor>& in) {
      const Tensor& x = in[0];
      Tensor a = add(gelu(x), silu(x));
      Tensor b = mul(sigmoid(x), tanh(x));
      Tensor c = rsqrt(add(abs(x), 1.0));
      Tensor d = sub(exp(mul(x, 0.5)), log(add(mul(x, x), 1.0)));
      Tensor e = gelu(x, true);
      Tensor s = add(add(add(a, b), add(c, d)), add(e, erf(x)));
      Tensor r = add(sum(s, {1}, true), mean(s, {2}, true));
      r = add(r, max(s, {1, 2}, true));
      r = add(r, var(s, {2}, 1, true));
      r = sub(r, min(s, {}, false));
      return std::vector<Tensor>{add(r, div(sin(x), add(cos(x), 2.0))), pow(abs(x), scalar_like(x, 1.5))};
    };
    out.push_back({"elementwise", fn, {random_uniform({2, 3, 4}, 51, -2, 2)}, {}});
  }
  {  // shapes and indexing: permute, slice, concat, expand, index_select, gather, embedding,
     // where, comparisons, cast, argmax, rms_norm
    Tensor table = weight({10, 4}, 61), norm_w = weight({4}, 62, 1.0);
    TensorsFn fn = [=](const std::vector<Tensor>& in) {
      const Tensor& x = in[0];  // [2, 3, 4]
      Tensor p = permute(x, {0, 2, 1});                                      // [2, 4, 3]
      Tensor s = slice(p, 1, 1, 4, 2);                                       // [2, 2, 3]
      Tensor c = concat({s, slice(p, 1, 0, 1)}, 1);                          // [2, 3, 3]
      Tensor idx = Tensor::from_vector(std::vector<int64_t>{2, 0, 1, 2}, Shape{4});
      Tensor sel = index_select(x, 2, idx);                                  // [2, 3, 4]
      Tensor gidx = Tensor::from_vector(std::vector<int64_t>{0, 1, 0, 2, 1, 1, 0, 0, 2, 1, 0, 2, 1, 1, 0, 0, 2, 2, 1, 0, 0, 1, 2, 0},
                                        Shape{2, 3, 4});
      Tensor g = gather(x, 1, gidx);                                         // [2, 3, 4]
      Tensor ids = cast(argmax(x, 2), DType::kInt64);                        // [2, 3]
      Tensor emb = embedding(ids, table);                                    // [2, 3, 4]
      Tensor w = where(gt(x, g), sel, emb);
      Tensor n = dispatch1(OpId::k_rms_norm, {w, norm_w}, Attrs::of(1e-5, false));
      Tensor e = expand(reshape(sum(c, {2}), {2, 3, 1}), {2, 3, 4});
      Tensor flag = cast(logical_or(le(x, scalar_like(x, 0.0)), ne(g, sel)), DType::kFloat32);
      Tensor flat = argmin(x, std::nullopt, true);  // the flat index over all elements, kept as [1, 1, 1]
      return std::vector<Tensor>{add(add(n, e), flag), ids, add(flat, argmax(x))};
    };
    out.push_back({"shapes_indexing", fn, {random_uniform({2, 3, 4}, 71, -2, 2)}, {}});
  }
  {  // the chapter's smoke models (issue 10 item 6): AddNet, and MobileNetV2 in eval mode
    TensorsFn add_net = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{add(in[0], in[1])}; };
    out.push_back({"addnet", add_net, {random_uniform({2, 3}, 81, -1, 1), random_uniform({2, 3}, 82, -1, 1)}, {}});
    auto net = std::make_shared<MobileNetV2>(10, 0.25, 7);
    net->set_train(false);
    TensorsFn mobilenet = [net](const std::vector<Tensor>& in) { return std::vector<Tensor>{(*net)(in[0])}; };
    out.push_back({"mobilenet_v2", mobilenet, {random_uniform({1, 3, 32, 32}, 91, -1, 1)}, {}, 1e-4, false});
  }
  return out;
}

}  // namespace spore::onnx_models
