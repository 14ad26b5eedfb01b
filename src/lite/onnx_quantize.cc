// `spore lite quantize` (NOTE [Dynamic int8 products]): MatMul, Gemm and Conv nodes whose weight is
// an initializer get int8 weights with one scale per output channel (quantize_weight_per_column's
// rule). Dynamic form: a product becomes com.microsoft DynamicQuantizeMatMul, a convolution ONNX
// Runtime's DynamicQuantizeLinear + ConvInteger + Cast + Mul (+ Add) chain. QDQ form: the node stays
// and reads a per-channel DequantizeLinear of the int8 weight. The graph keeps its inputs, outputs
// and every other node; a weight another node also reads stays as well.
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

// A weight's int8 values and one scale per output channel (`axis`), by quantize_weight_per_column's
// rule applied to the weight seen as a [values per channel, channels] matrix.
struct ChannelQuant {
  std::vector<int8_t> q;
  std::vector<float> scale;
};

ChannelQuant per_channel(const std::vector<float>& v, const std::vector<int64_t>& dims, int axis, const std::string& label) {
  int64_t outer = 1, inner = 1;
  const int64_t ch = dims[(size_t)axis];
  for (int d = 0; d < (int)dims.size(); ++d) {
    if (d < axis) outer *= dims[(size_t)d];
    if (d > axis) inner *= dims[(size_t)d];
  }
  std::vector<float> m(v.size());  // [outer * inner, ch]
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < ch; ++c)
      for (int64_t i = 0; i < inner; ++i) m[(size_t)((o * inner + i) * ch + c)] = v[(size_t)((o * ch + c) * inner + i)];
  Int8Weight w;
  try {
    w = quantize_weight_per_column(Tensor::from_vector<float>(m, Shape{outer * inner, ch}));
  } catch (const Error& e) {
    fail(ErrorCode::kValue, label + ": " + e.what());
  }
  ChannelQuant r;
  r.q.resize(v.size());
  const int8_t* q = w.q.data<int8_t>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < ch; ++c)
      for (int64_t i = 0; i < inner; ++i) r.q[(size_t)((o * ch + c) * inner + i)] = q[(o * inner + i) * ch + c];
  r.scale.assign(w.scale.data<float>(), w.scale.data<float>() + ch);
  return r;
}

NodeProto make_node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out,
                    const std::string& name) {
  NodeProto n;
  n.set_op_type(op);
  n.set_name(name);
  for (const auto& s : in) n.add_input(s);
  for (const auto& s : out) n.add_output(s);
  return n;
}

int64_t default_opset(const ModelProto& m) {
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  return 0;
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
  const bool qdq = options.format == QuantizeFormat::kQdq;
  const int64_t opset = default_opset(model);

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
    taken.insert(n.name());
    for (const auto& a : n.attribute()) subgraphs = subgraphs || a.has_g() || a.graphs_size() > 0;
  }
  for (const auto& v : g.input()) taken.insert(v.name());
  for (const auto& v : g.output()) {
    taken.insert(v.name());
    ++readers[v.name()];
  }
  auto fresh_name = [&](const std::string& base) {
    const std::string name = fresh(taken, base);
    taken.insert(name);
    return name;
  };

  std::set<std::string> replaced;  // float weights whose every reader was rewritten
  std::vector<TensorProto> added;
  auto add_init = [&](const std::string& base, int type, const std::vector<int64_t>& dims, const void* data, size_t bytes) {
    const std::string name = fresh_name(base);
    added.push_back(make_initializer(name, type, dims, data, bytes));
    return name;
  };
  auto release = [&](const std::string& name) {
    if (--readers[name] == 0) replaced.insert(name);
  };
  // The weight's int8 copy and scales, and a DequantizeLinear of them along `axis` (weight-only QDQ):
  // the name the node reads instead of the float weight.
  std::vector<NodeProto> nodes;
  auto dequantized = [&](const TensorProto& w, const std::vector<int64_t>& dims, const ChannelQuant& cq, int axis,
                         const std::string& node_name) {
    const std::string q = add_init(w.name() + "_int8", TensorProto::INT8, dims, cq.q.data(), cq.q.size());
    const std::string sc = add_init(w.name() + "_scale", TensorProto::FLOAT, {(int64_t)cq.scale.size()}, cq.scale.data(),
                                    cq.scale.size() * 4);
    const std::string out = fresh_name(w.name() + "_dequantized");
    NodeProto dq = make_node("DequantizeLinear", {q, sc}, {out}, fresh_name(node_name + "_dequantize"));
    auto* a = dq.add_attribute();
    a->set_name("axis");
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(axis);
    nodes.push_back(std::move(dq));
    return out;
  };

  for (int ni = 0; ni < g.node_size(); ++ni) {
    NodeProto n = g.node(ni);
    const std::string node_name = n.name().empty() ? std::to_string(ni) : n.name();
    const std::string label = "node '" + node_name + "' (" + n.op_type() + ")";
    auto keep = [&](const std::string& why) {
      report.skipped.push_back({node_name, n.op_type(), why});
      nodes.push_back(n);
    };
    const bool standard = n.domain().empty() || n.domain() == "ai.onnx";
    const bool conv = standard && n.op_type() == "Conv";
    if (!standard || (!conv && n.op_type() != "MatMul" && n.op_type() != "Gemm")) {
      nodes.push_back(std::move(n));
      continue;
    }
    if (conv && !options.convolutions) {
      keep("convolutions were left out (--no-conv)");
      continue;
    }
    if (qdq && opset < 13) {
      keep("the model's op set is " + std::to_string(opset) + "; per-channel DequantizeLinear needs 13");
      continue;
    }
    if (conv && !qdq && opset < 11) {
      keep("the model's op set is " + std::to_string(opset) + "; DynamicQuantizeLinear needs 11");
      continue;
    }
    if (n.input_size() < 2 || !init.count(n.input(1))) {
      keep(conv ? "its weight is computed, not an initializer"
                : "its B is computed, not an initializer (a product of two activations)");
      continue;
    }
    const TensorProto& w = g.initializer(init[n.input(1)]);
    std::vector<float> values;
    std::string why;
    if (!float_values(w, values, why)) {
      keep(why);
      continue;
    }
    std::vector<int64_t> dims(w.dims().begin(), w.dims().end());
    if (conv ? dims.size() < 3 : dims.size() != 2) {
      keep("its weight is " + std::to_string(dims.size()) + "-D (" + (conv ? "a convolution's is 3-D or more" : "a 2-D weight is quantized") + ")");
      continue;
    }
    if ((int64_t)values.size() < options.min_elements) {
      keep("its weight has " + std::to_string(values.size()) + " elements, under --min-elements");
      continue;
    }
    const std::string wlabel = label + ", weight '" + w.name() + "'";

    if (conv) {
      // The bias, when there is one, must be a float32 initializer of one value per output channel.
      std::vector<float> bias;
      if (n.input_size() > 2 && !n.input(2).empty()) {
        if (!init.count(n.input(2)) || !float_values(g.initializer(init[n.input(2)]), bias, why) ||
            (int64_t)bias.size() != dims[0]) {
          keep("its bias is not a float32 initializer of one value per output channel");
          continue;
        }
      }
      const ChannelQuant cq = per_channel(values, dims, 0, wlabel);
      report.weight_bytes_before += (int64_t)values.size() * 4;
      report.weight_bytes_after += (int64_t)values.size() + dims[0] * 4;
      release(w.name());
      ++report.quantized;
      ++report.convolutions;
      if (qdq) {
        n.set_input(1, dequantized(w, dims, cq, 0, node_name));
        nodes.push_back(std::move(n));
        continue;
      }
      // ONNX Runtime's dynamic form: x quantized to uint8 per tensor at run time, ConvInteger's
      // exact int32 sums, then x_scale * w_scale[o] and the bias per output channel.
      std::vector<int64_t> channel_dims(dims.size() - 1, 1);  // [O, 1, ...]: broadcast over [N, O, spatial...]
      channel_dims[0] = dims[0];
      const std::string wq = add_init(w.name() + "_int8", TensorProto::INT8, dims, cq.q.data(), cq.q.size());
      const std::string ws = add_init(w.name() + "_scale", TensorProto::FLOAT, channel_dims, cq.scale.data(), cq.scale.size() * 4);
      const std::string xq = fresh_name(n.input(0) + "_quantized"), xs = fresh_name(n.input(0) + "_scale"),
                        xz = fresh_name(n.input(0) + "_zero_point");
      nodes.push_back(make_node("DynamicQuantizeLinear", {n.input(0)}, {xq, xs, xz}, fresh_name(node_name + "_quantize")));
      NodeProto ci = make_node("ConvInteger", {xq, wq, xz}, {fresh_name(node_name + "_int32")}, fresh_name(node_name + "_integer"));
      for (const auto& a : n.attribute()) *ci.add_attribute() = a;  // ConvInteger takes Conv's attributes
      const std::string sums = ci.output(0);
      nodes.push_back(std::move(ci));
      NodeProto cast = make_node("Cast", {sums}, {fresh_name(node_name + "_float")}, fresh_name(node_name + "_cast"));
      auto* to = cast.add_attribute();
      to->set_name("to");
      to->set_type(::onnx::AttributeProto::INT);
      to->set_i(TensorProto::FLOAT);
      const std::string f = cast.output(0);
      nodes.push_back(std::move(cast));
      const std::string scale = fresh_name(node_name + "_scale");
      nodes.push_back(make_node("Mul", {xs, ws}, {scale}, fresh_name(node_name + "_scales")));
      if (bias.empty()) {
        nodes.push_back(make_node("Mul", {f, scale}, {n.output(0)}, node_name));
        continue;
      }
      const std::string b = add_init(n.input(2) + "_channels", TensorProto::FLOAT, channel_dims, bias.data(), bias.size() * 4);
      release(n.input(2));
      const std::string scaled = fresh_name(node_name + "_scaled");
      nodes.push_back(make_node("Mul", {f, scale}, {scaled}, fresh_name(node_name + "_rescale")));
      nodes.push_back(make_node("Add", {scaled, b}, {n.output(0)}, node_name));
      continue;
    }

    const bool gemm = n.op_type() == "Gemm";
    int64_t k = dims[0], cols = dims[1];
    float alpha = 1;
    bool trans_b = false;
    std::string bias;
    if (gemm) {
      const auto* ta = attr(n, "transA");
      const auto* tb = attr(n, "transB");
      const auto* al = attr(n, "alpha");
      const auto* be = attr(n, "beta");
      if (ta && ta->i() != 0 && !qdq) {
        keep("transA = 1");
        continue;
      }
      alpha = al ? al->f() : 1.0f;
      trans_b = tb && tb->i() != 0;
      const float beta = be ? be->f() : 1.0f;
      if (!qdq && n.input_size() > 2 && !n.input(2).empty()) {
        bool ok = beta == 1.0f && init.count(n.input(2));
        if (ok) {
          const TensorProto& c = g.initializer(init[n.input(2)]);
          int64_t cn = 1;
          for (int64_t d : c.dims()) cn *= d;
          const int64_t ccols = trans_b ? dims[0] : dims[1];
          ok = c.data_type() == TensorProto::FLOAT && cn == ccols && (c.dims_size() == 1 || (c.dims_size() == 2 && c.dims(0) == 1));
        }
        if (!ok) {
          keep("its C is not a float32 row of one value per column with beta = 1");
          continue;
        }
        bias = n.input(2);
      }
    }
    if (qdq) {  // the weight keeps its layout; its output channels are B's columns ([n, k] rows with transB)
      const ChannelQuant cq = per_channel(values, dims, trans_b ? 0 : 1, wlabel);
      report.weight_bytes_before += k * cols * 4;
      report.weight_bytes_after += k * cols + (int64_t)cq.scale.size() * 4;
      release(w.name());
      ++report.quantized;
      n.set_input(1, dequantized(w, dims, cq, trans_b ? 0 : 1, node_name));
      nodes.push_back(std::move(n));
      continue;
    }
    if (trans_b) {  // B is [n, k]: its transpose is the [k, n] weight
      std::vector<float> t(values.size());
      for (int64_t r = 0; r < k; ++r)
        for (int64_t c2 = 0; c2 < cols; ++c2) t[(size_t)(c2 * k + r)] = values[(size_t)(r * cols + c2)];
      values.swap(t);
      std::swap(k, cols);
    }
    ChannelQuant cq = per_channel(values, {k, cols}, 1, wlabel);
    if (alpha != 1.0f)
      for (float& s : cq.scale) s *= alpha;
    const std::string qname = add_init(w.name() + "_int8", TensorProto::INT8, {k, cols}, cq.q.data(), cq.q.size());
    const std::string sname = add_init(w.name() + "_scale", TensorProto::FLOAT, {cols}, cq.scale.data(), cq.scale.size() * 4);
    report.weight_bytes_before += k * cols * 4;
    report.weight_bytes_after += k * cols + cols * 4;
    release(w.name());
    std::string bias_name;
    if (!bias.empty()) {  // DynamicQuantizeMatMul's bias is 1-D
      std::vector<float> cv;
      float_values(g.initializer(init[bias]), cv, why);
      bias_name = add_init(bias + "_bias", TensorProto::FLOAT, {cols}, cv.data(), cv.size() * 4);
      release(bias);
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
    nodes.push_back(std::move(n));
    ++report.quantized;
  }
  g.clear_node();
  for (NodeProto& n : nodes) *g.add_node() = std::move(n);
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
  if (report.quantized > report.convolutions && !qdq) {
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
