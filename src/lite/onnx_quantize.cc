// `spore lite quantize` (NOTE [Dynamic int8 products]): MatMul and Gemm nodes whose weight is an
// initializer become com.microsoft DynamicQuantizeMatMul over int8 weights with per-column scales
// (quantize_weight_per_column, the rule dynamic_quant_matmul's tests check). The graph keeps its
// inputs, outputs and every other node; a weight another node also reads stays as well.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include "spore/error.h"
#include "spore/format.h"
#include "spore/int8.h"
#include "spore/lite_quantize.h"

namespace spore::lite {

namespace {

using ::onnx::ModelProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

[[noreturn]] void fail(ErrorCode code, const std::string& message) { throw Error(code, message); }

const ::onnx::AttributeProto* attr(const NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

// A float32 initializer's values, or an empty optional with the reason it is not one.
bool float_values(const TensorProto& t, std::vector<float>& out, std::string& why) {
  if (t.data_type() != TensorProto::FLOAT) {
    why = "its weight is not float32";
    return false;
  }
  if (t.data_location() == TensorProto::EXTERNAL)
    fail(ErrorCode::kUnsupported, "initializer '" + t.name() +
                                      "' keeps its data in an external file; load and save the model with its "
                                      "data inside (onnx.load then onnx.save) before quantizing");
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && n > std::numeric_limits<int64_t>::max() / d)) fail(ErrorCode::kFormat, "initializer '" + t.name() + "' has a bad shape");
    n *= d;
  }
  if (t.has_raw_data()) {
    if ((int64_t)t.raw_data().size() != n * 4)
      fail(ErrorCode::kFormat, "initializer '" + t.name() + "' holds " + std::to_string(t.raw_data().size()) +
                                   " bytes for " + std::to_string(n) + " float32 values");
    out.resize((size_t)n);
    std::memcpy(out.data(), t.raw_data().data(), (size_t)n * 4);  // little-endian, as ONNX stores it
  } else {
    if (t.float_data_size() != n)
      fail(ErrorCode::kFormat, "initializer '" + t.name() + "' holds " + std::to_string(t.float_data_size()) +
                                   " values for its " + std::to_string(n) + " elements");
    out.assign(t.float_data().begin(), t.float_data().end());
  }
  return true;
}

TensorProto make_initializer(const std::string& name, int type, const std::vector<int64_t>& dims, const void* data,
                             size_t bytes) {
  TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(static_cast<const char*>(data), bytes));
  return t;
}

std::string fresh(const std::set<std::string>& taken, const std::string& base) {
  std::string name = base;
  for (int i = 1; taken.count(name); ++i) name = base + "_" + std::to_string(i);
  return name;
}

}  // namespace

std::string quantize_onnx_bytes(std::span<const uint8_t> bytes, const std::string& label, QuantizeReport& report,
                                const QuantizeOptions& options) {
  if (bytes.size() > (size_t)std::numeric_limits<int>::max())
    fail(ErrorCode::kUnsupported, label + ": an ONNX file over 2 GiB (protobuf's limit)");
  ModelProto model;
  if (!model.ParseFromArray(bytes.data(), (int)bytes.size()) || !model.has_graph())
    fail(ErrorCode::kFormat, label + ": not an ONNX model (the protobuf does not parse, or holds no graph)");
  report = QuantizeReport();
  report.file_bytes_before = (int64_t)bytes.size();
  ::onnx::GraphProto& g = *model.mutable_graph();

  std::map<std::string, int> init;  // initializer name -> index
  std::set<std::string> taken;      // every name in the graph, for fresh ones
  for (int i = 0; i < g.initializer_size(); ++i) {
    init[g.initializer(i).name()] = i;
    taken.insert(g.initializer(i).name());
  }
  std::map<std::string, int> readers;  // how many main-graph inputs (and outputs) read each name
  bool subgraphs = false;              // a subgraph may read any outer name: no weight is dropped then
  for (const NodeProto& n : g.node()) {
    for (const std::string& s : n.input()) ++readers[s];
    for (const std::string& s : n.output()) taken.insert(s);
    for (const auto& a : n.attribute()) subgraphs = subgraphs || a.has_g() || a.graphs_size() > 0;
  }
  for (const auto& v : g.input()) taken.insert(v.name());
  for (const auto& v : g.output()) {
    taken.insert(v.name());
    ++readers[v.name()];
  }

  std::set<std::string> replaced;  // float weights whose every reader was rewritten
  std::vector<TensorProto> added;
  for (int ni = 0; ni < g.node_size(); ++ni) {
    NodeProto& n = *g.mutable_node(ni);
    if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
    const std::string node_name = n.name().empty() ? std::to_string(ni) : n.name();
    const std::string label = "node '" + node_name + "' (" + n.op_type() + ")";
    auto skip = [&](const std::string& why) { report.skipped.push_back({node_name, n.op_type(), why}); };
    if (n.op_type() == "Conv") {
      skip("convolutions stay float32 (no int8 convolution yet)");
      continue;
    }
    if (n.op_type() != "MatMul" && n.op_type() != "Gemm") continue;
    const bool gemm = n.op_type() == "Gemm";
    if (n.input_size() < 2 || !init.count(n.input(1))) {
      skip("its B is computed, not an initializer (a product of two activations)");
      continue;
    }
    const TensorProto& w = g.initializer(init[n.input(1)]);
    std::vector<float> values;
    std::string why;
    if (!float_values(w, values, why)) {
      skip(why);
      continue;
    }
    if (w.dims_size() != 2) {
      skip("its weight is " + std::to_string(w.dims_size()) + "-D (a 2-D weight is quantized)");
      continue;
    }
    int64_t k = w.dims(0), cols = w.dims(1);
    float alpha = 1;
    std::string bias;
    if (gemm) {
      const auto* ta = attr(n, "transA");
      const auto* tb = attr(n, "transB");
      const auto* al = attr(n, "alpha");
      const auto* be = attr(n, "beta");
      if (ta && ta->i() != 0) {
        skip("transA = 1");
        continue;
      }
      alpha = al ? al->f() : 1.0f;
      const float beta = be ? be->f() : 1.0f;
      if (n.input_size() > 2 && !n.input(2).empty()) {
        bool ok = beta == 1.0f && init.count(n.input(2));
        if (ok) {
          const TensorProto& c = g.initializer(init[n.input(2)]);
          int64_t cn = 1;
          for (int64_t d : c.dims()) cn *= d;
          const int64_t ccols = tb && tb->i() != 0 ? w.dims(0) : w.dims(1);
          ok = c.data_type() == TensorProto::FLOAT && cn == ccols && (c.dims_size() == 1 || (c.dims_size() == 2 && c.dims(0) == 1));
        }
        if (!ok) {
          skip("its C is not a float32 row of one value per column with beta = 1");
          continue;
        }
        bias = n.input(2);
      }
      if (tb && tb->i() != 0) {  // B is [n, k]: its transpose is the [k, n] weight
        std::vector<float> t(values.size());
        for (int64_t r = 0; r < k; ++r)
          for (int64_t c2 = 0; c2 < cols; ++c2) t[(size_t)(c2 * k + r)] = values[(size_t)(r * cols + c2)];
        values.swap(t);
        std::swap(k, cols);
      }
    }
    if (k * cols < options.min_elements) {
      skip("its weight has " + std::to_string(k * cols) + " elements, under --min-elements");
      continue;
    }
    Tensor wt = Tensor::from_vector<float>(values, Shape{k, cols});
    Int8Weight q;
    try {
      q = quantize_weight_per_column(wt);
    } catch (const Error& e) {
      fail(ErrorCode::kValue, label + ", weight '" + w.name() + "': " + e.what());
    }
    std::vector<float> scales(q.scale.data<float>(), q.scale.data<float>() + cols);
    if (alpha != 1.0f)
      for (float& s : scales) s *= alpha;
    const std::string qname = fresh(taken, w.name() + "_int8"), sname = fresh(taken, w.name() + "_scale");
    taken.insert(qname);
    taken.insert(sname);
    added.push_back(make_initializer(qname, TensorProto::INT8, {k, cols}, q.q.data<int8_t>(), (size_t)(k * cols)));
    added.push_back(make_initializer(sname, TensorProto::FLOAT, {cols}, scales.data(), scales.size() * 4));
    report.weight_bytes_before += k * cols * 4;
    report.weight_bytes_after += k * cols + cols * 4;
    if (--readers[w.name()] == 0) replaced.insert(w.name());
    std::string bias_name;
    if (!bias.empty()) {  // DynamicQuantizeMatMul's bias is 1-D
      const TensorProto& c = g.initializer(init[bias]);
      std::vector<float> cv;
      float_values(c, cv, why);
      bias_name = fresh(taken, bias + "_bias");
      taken.insert(bias_name);
      added.push_back(make_initializer(bias_name, TensorProto::FLOAT, {cols}, cv.data(), cv.size() * 4));
      if (--readers[bias] == 0) replaced.insert(bias);
    }
    const std::string a = n.input(0);
    n.clear_input();
    n.clear_attribute();
    n.set_op_type("DynamicQuantizeMatMul");
    n.set_domain("com.microsoft");
    n.add_input(a);
    n.add_input(qname);
    n.add_input(sname);
    if (!bias_name.empty()) {
      n.add_input("");  // no b_zero_point: the weight is symmetric
      n.add_input(bias_name);
    }
    ++report.quantized;
  }
  // The float weights nothing reads any more go (unless a subgraph might read them by name).
  if (!subgraphs && !replaced.empty()) {
    ::google::protobuf::RepeatedPtrField<TensorProto> kept;
    for (TensorProto& t : *g.mutable_initializer())
      if (!replaced.count(t.name())) kept.Add(std::move(t));
    g.mutable_initializer()->Swap(&kept);
    for (int i = g.input_size() - 1; i >= 0; --i)  // old models also list initializers as inputs
      if (replaced.count(g.input(i).name())) g.mutable_input()->DeleteSubrange(i, 1);
  }
  for (TensorProto& t : added) *g.add_initializer() = std::move(t);
  if (report.quantized > 0) {
    bool has = false;
    for (const auto& o : model.opset_import()) has = has || o.domain() == "com.microsoft";
    if (!has) {
      auto* o = model.add_opset_import();
      o->set_domain("com.microsoft");
      o->set_version(1);
    }
  }
  std::string written;
  if (!model.SerializeToString(&written))
    fail(ErrorCode::kUnsupported, "the quantized model does not serialise (over protobuf's 2 GiB limit?)");
  report.file_bytes_after = (int64_t)written.size();
  return written;
}

QuantizeReport quantize_onnx(const std::filesystem::path& in, const std::filesystem::path& out,
                             const QuantizeOptions& options) {
  std::error_code ec;
  if (std::filesystem::exists(out, ec) && std::filesystem::equivalent(in, out, ec))
    fail(ErrorCode::kValue, "the output " + out.string() + " is the input; write the quantized model to another file");
  std::ifstream f(in, std::ios::binary);
  if (!f) fail(ErrorCode::kIO, "cannot open " + in.string());
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!f.eof() && f.fail()) fail(ErrorCode::kIO, "cannot read " + in.string());
  QuantizeReport report;
  const std::string written =
      quantize_onnx_bytes(std::span<const uint8_t>((const uint8_t*)bytes.data(), bytes.size()), in.string(), report, options);
  atomic_write_file(out, std::span<const uint8_t>((const uint8_t*)written.data(), written.size()));
  return report;
}

}  // namespace spore::lite
