// The ONNX importer's mapping state (NOTE [ONNX]), shared by the files that map ONNX ops onto
// registry ops: onnx_import.cc (the graph walk and most ops), onnx_map_layout.cc (Pad modes,
// negative-step Slice, DepthToSpace, Tile, Trilu, CumSum), onnx_map_resize.cc (Resize, Upsample),
// onnx_map_conv_transpose.cc, onnx_map_recurrent.cc (LSTM, GRU, RNN), onnx_map_control.cc (If, Loop, Scan), onnx_map_if_node.cc (If at run time),
// onnx_map_loop_node.cc (Loop at run time), onnx_map_ragged.cc (outputs whose extent the run decides) and
// onnx_map_math.cc (rounding, Mod, OneHot, Hardmax, group and Lp normalisation) and
// onnx_map_nd_index.cc (GatherND, ScatterND), onnx_map_topk.cc, onnx_map_attention.cc (Attention), onnx_map_flex_attention.cc (FlexAttention)
// onnx_map_loss.cc (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss), onnx_map_trig.cc (Tan,
// Sinh, ..., Acos), onnx_map_product.cc (ReduceProd, CumProd), onnx_map_rotary.cc and
// onnx_map_einsum.cc, onnx_map_bitwise.cc (Bitwise*, BitShift) and onnx_map_linear_attention.cc
// (LinearAttention, CausalConvWithState), onnx_map_grid_sample.cc and onnx_map_quantize.cc (the
// int8 family), onnx_map_pool_nd.cc (3-D, dilated and ceil-mode pooling, LpPool) and
// onnx_map_signal.cc (windows, DFT), onnx_map_scatter.cc (TensorScatter, Col2Im) and
// onnx_map_nms.cc and onnx_map_unique.cc (NonMaxSuppression, Unique, NonZero: computed when the graph
// is mapped).
#pragma once
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "lite/import_graph.h"
#include "spore/error.h"
#include "spore/onnx.h"
#include "spore/ops.h"

namespace spore::onnx::detail {

using ::onnx::AttributeProto;
using ::onnx::GraphProto;
using ::onnx::ModelProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

inline constexpr uint32_t kNone = UINT32_MAX;  // an omitted optional input
// Nested If branches deeper than this are refused (a hostile file could nest thousands).
inline constexpr int kMaxSubgraphDepth = 16;
// Values at most this large whose inputs are all known when the graph is mapped are computed then
// (constants folded; with predict's inputs, NOTE [ONNX dynamic shapes]).
inline constexpr int64_t kMaxKnownElements = 4096;
// Loop and Scan iterations one mapping may unroll in all (nested loops multiply).
inline constexpr int64_t kMaxUnrolled = 65536;

[[noreturn]] inline void fail(ErrorCode code, const std::string& what) { throw Error(code, what); }

bool dtype_of(int32_t t, DType& out);
std::string onnx_type_name(int32_t t);

// NOTE [ONNX carried types]: an ONNX element type Spore has no dtype for (int16, uint16, uint32,
// int4, uint4, int2, uint2, the float8 types, float4e2m1), carried in a wider dtype that holds
// every value exactly (onnx_carried_types.cc).
struct Carried {
  int32_t onnx;  // TensorProto.DataType
  const char* name;
  DType carrier;
  int bits = 0;  // integers: the width; 0 for the minifloats
  bool is_signed = false;
  int exp_bits = 0, mant = 0, bias = 0;  // minifloats
  double max = 0;                        // the largest finite value
  enum Overflow { kNaN, kInf, kSaturate } overflow = kNaN;  // a value past max, unsaturated
  bool neg_zero = true;
};
const Carried* carried_type(int32_t onnx);
// Spore's dtype for an ONNX type: its own, or the carrier of a carried one.
bool value_dtype_of(int32_t t, DType& out);
int64_t checked_numel(const std::vector<int64_t>& dims, const std::string& what);
Tensor tensor_of(const TensorProto& t, const std::string& what);
const AttributeProto* find_attr(const NodeProto& n, const std::string& name);

struct Mapper;

// One ONNX node being mapped: its inputs (value ids, kNone when omitted) and helpers.
struct NodeCtx {
  Mapper& m;
  const NodeProto& node;
  std::vector<uint32_t> in;
  std::string where;  // "node 3 (Conv 'conv1')"

  [[noreturn]] void unsupported(const std::string& what) const {
    fail(ErrorCode::kUnsupported, where + ": " + what + " is not mapped onto Spore's ops");
  }
  [[noreturn]] void bad(const std::string& what) const { fail(ErrorCode::kFormat, where + ": " + what); }
  int64_t i(const std::string& name, int64_t dflt) const;
  double f(const std::string& name, double dflt) const;
  std::string s(const std::string& name, const std::string& dflt) const;
  bool has(const std::string& name) const { return find_attr(node, name) != nullptr; }
  std::vector<int64_t> ints(const std::string& name, std::vector<int64_t> dflt = {}) const;
  std::vector<double> floats(const std::string& name, std::vector<double> dflt = {}) const;
  std::vector<std::string> strings(const std::string& name) const;
  // Input k, required.
  uint32_t at(size_t k) const {
    if (k >= in.size() || in[k] == kNone) bad("input " + std::to_string(k) + " is required");
    return in[k];
  }
  bool given(size_t k) const { return k < in.size() && in[k] != kNone; }
};

struct Mapper : lite::GraphBuilder {
  std::string label;
  int64_t opset = 0;
  int depth = 0;  // of If branches being mapped
  // Loop and Scan iterations unrolled so far in this mapping, nested ones included: bounded so that
  // nested loops cannot multiply into an endless mapping (kMaxUnrolled).
  int64_t unrolled = 0;
  std::map<std::string, uint32_t> names;
  const std::map<std::string, Tensor>* given = nullptr;  // read_onnx_with_inputs: every input's tensor
  std::set<std::string> used;                             // the inputs whose values were read
  // Small computed values whose inputs are all known: with predict's inputs given, their values
  // and the inputs they come from (`known`); without, the values that will be known then
  // (`derivable`), so that reading one defers the mapping to predict (InputValueNeeded).
  std::map<uint32_t, std::pair<Tensor, std::set<std::string>>> known;
  std::set<uint32_t> derivable;
  // A subgraph's inputs that only the run computes (a Loop body's iteration number, condition and
  // loop-carried values; an outer value computed from large values): never known, nor derivable
  // from predict's inputs, when the subgraph is mapped (NOTE [ONNX Loop at run time]).
  std::set<uint32_t> unknowable;
  // Inside a Loop body: the values the run computes whose value at the loop's entry is known (the
  // entry state, and small values computed from it), and the checks (bool values) the body returns
  // after its state, which must hold in every iteration: a Slice's or Range's extent is planned from
  // the entry value and checked at run time (NOTE [ONNX Loop at run time]).
  std::map<uint32_t, Tensor> hints;
  std::vector<uint32_t> checks;
  // Values whose extent along an axis only the run knows, with that axis and the length value
  // (NOTE [Ragged outputs], onnx_map_ragged.cc).
  std::map<uint32_t, std::pair<int, uint32_t>> ragged;
  // Values of a carried element type, and that type (NOTE [ONNX carried types]).
  std::map<uint32_t, int32_t> carried;
  // The value of `id` when the mapping knows it (a constant, a known value) or its entry value
  // (hints); nullptr otherwise.
  const Tensor* hinted(uint32_t id) const;

  template <typename T>
  uint32_t constant_of(const std::vector<T>& values, const Shape& shape) {
    return constant(Tensor::from_vector(values, shape));
  }
  bool is_constant(uint32_t id) const {
    return g.values[id].kind == ir::ValueKind::kConstant || g.values[id].kind == ir::ValueKind::kParameter;
  }
  // The data of a value that must be known when the graph is mapped (a Reshape's shape, Slice's
  // starts, If's condition): an initializer, a Constant, or, with predict's inputs, a small
  // value computed from them.
  const Tensor& data(const NodeCtx& c, uint32_t id, const char* what);
  std::vector<int64_t> int_data(const NodeCtx& c, uint32_t id, const char* what);
  std::vector<double> float_data(const NodeCtx& c, uint32_t id, const char* what);
  // Emits one registry op; its outputs get shapes from the registry's inference.
  std::vector<uint32_t> emit_all(const NodeCtx& c, OpId op, const std::vector<uint32_t>& ins, const Attrs& attrs = {});
  uint32_t emit(const NodeCtx& c, OpId op, const std::vector<uint32_t>& ins, const Attrs& attrs = {}) {
    return emit_all(c, op, ins, attrs)[0];
  }
  uint32_t reshape(const NodeCtx& c, uint32_t x, std::vector<int64_t> shape) {
    return emit(c, OpId::k_reshape, {x}, Attrs::of(std::move(shape)));
  }
  uint32_t cast_to(const NodeCtx& c, uint32_t x, DType t) {
    return dtype(x) == t ? x : emit(c, OpId::k_cast, {x}, Attrs::of(t));
  }
  uint32_t scalar(double v, DType t) {
    Tensor s = Tensor::from_vector(std::vector<double>{v}, Shape{});
    return constant(t == DType::kFloat64 ? s : dispatch1(OpId::k_cast, {s}, Attrs::of(t)));
  }
  // x's slices at the constant `index` along `axis` (index_select): the layout ops' one primitive.
  uint32_t take(const NodeCtx& c, uint32_t x, int axis, const std::vector<int64_t>& index) {
    return emit(c, OpId::k_index_select, {x, constant_of(index, Shape{(int64_t)index.size()})}, Attrs::of((int64_t)axis));
  }
};

inline int normalize_axis(const NodeCtx& c, int64_t axis, int rank) {
  if (axis < -rank || axis >= std::max(rank, 1)) c.bad("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return (int)(axis < 0 ? axis + rank : axis);
}

// The permutation that moves `axis` of a rank-`rank` value last (the others keep their order),
// and its inverse: ops that work along the last axis (CumSum's matmul, TopK's ranks) go there and
// back.
struct AxisLast {
  std::vector<int64_t> perm, back;
};
inline AxisLast axis_last(int rank, int axis) {
  AxisLast a;
  for (int d = 0; d < rank; ++d)
    if (d != axis) a.perm.push_back(d);
  a.perm.push_back(axis);
  a.back.resize((size_t)rank);
  for (int d = 0; d < rank; ++d) a.back[(size_t)a.perm[(size_t)d]] = d;
  return a;
}

using Handler = std::function<std::vector<uint32_t>(NodeCtx&)>;
using HandlerTable = std::map<std::string, Handler>;

// x with `begin` and `end` cells of `value` added along `axis` (negative: cells cut off).
uint32_t pad_axis(NodeCtx& c, uint32_t x, int axis, int64_t begin, int64_t end, double value);
// Conv and pool padding as [top, left, bottom, right], auto_pad resolved.
std::vector<int64_t> resolve_pads(NodeCtx& c, const Shape& x, const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                                  const std::vector<int64_t>& dilations, const std::vector<int64_t>& pads);

// Floating x rounded half to even, floored, and truncated (NaN and |x| >= 2^52 pass through unchanged):
// onnx_map_math.cc.
uint32_t round_half_even(NodeCtx& c, uint32_t x);
uint32_t floor_of(NodeCtx& c, uint32_t x);
uint32_t trunc_of(NodeCtx& c, uint32_t x);

// NOTE [ONNX carried types] (onnx_carried_types.cc): the carried type of value `id` (nullptr when
// its type is Spore's own); an initializer's or Constant's data decoded into the carrier; x cast
// into a carried type (a minifloat rounded as Cast defines, with `saturate` and, for float8e8m0,
// `round_mode`; an integer type wrapped, or truncated from floating point); x wrapped into a carried
// integer type; and the rule applied to every node's results: an op on carried values either
// handles them itself, keeps their type (layout ops), is integer arithmetic wrapped back into the
// type, or is refused.
const Carried* carried_of(const Mapper& m, uint32_t id);
Tensor carried_tensor_of(const TensorProto& t, const Carried& ct, const std::string& what);
uint32_t cast_to_carried(NodeCtx& c, uint32_t x, const Carried& t, bool saturate = true, const std::string& round_mode = "up");
uint32_t wrap_to_carried(NodeCtx& c, uint32_t x, const Carried& t);
void settle_carried(NodeCtx& c, std::vector<uint32_t>& outs);
// bfloat16 arithmetic computes in float32 and rounds once per ONNX op, as ONNX Runtime's kernels do
// (Spore's bfloat16 kernels would round after every registry op a mapping composes): a node's
// bfloat16 inputs widened (false: none, or an op that only moves, casts or compares), and its
// float32 results narrowed back.
bool widen_bfloat16(NodeCtx& c);
void narrow_bfloat16(NodeCtx& c, std::vector<uint32_t>& outs);
// Softmax and Attention follow their function bodies instead, each step a bfloat16 op: for
// bfloat16, softmax over `axis` as max, x - max, exp, sum and quotient, each rounded.
uint32_t softmax_bfloat16_steps(NodeCtx& c, uint32_t x, int64_t axis);

// x's product along `axis`, kept as an extent of 1 (onnx_map_product.cc).
uint32_t product_along(NodeCtx& c, uint32_t x, int axis);
// flat [Q, ...] with the updates upd [T, ...] reduced into row lin[t] by mul, max or min
// (onnx_map_nd_index.cc; ScatterND and ScatterElements).
uint32_t scatter_reduced(NodeCtx& c, uint32_t flat, uint32_t lin, uint32_t upd, const std::string& reduction);

// NOTE [Exact integer products in float32] (onnx_exact_integer.cc): the largest |v - zp| of an
// 8-bit integer type t centred by the zero point `zp` (kNone: none; a computed one: anywhere in
// the range; INFINITY for other types); and the exact products of whole-valued operands whose
// termwise products are at most `bound` (float32 when one run holds the whole sum, else float64):
// a [.., K] times w [K, N] (batched as MatMul broadcasts), and `conv` (Conv's mapping, reading the
// node's attributes) of x by w.
double centered_bound(NodeCtx& c, DType t, uint32_t zp);
uint32_t exact_integer_matmul(NodeCtx& c, uint32_t a, uint32_t w, double bound);
uint32_t exact_integer_conv(NodeCtx& c, const Handler& conv, uint32_t x, uint32_t w, double bound);

// x dynamically quantized to uint8 as DynamicQuantizeLinear defines it (onnx_map_quantize.cc):
// `q` (uint8), `scale` (float32, one element) and `zero_point` (a float32 integer value).
struct DynamicQuant {
  uint32_t q, scale, zero_point;
};
DynamicQuant dynamic_quantize(NodeCtx& c, uint32_t x);

// An If whose condition `cond` is computed at run time: one if_else node carrying both branches
// as closed graphs (onnx_map_if_node.cc, NOTE [Lite control flow]).
std::vector<uint32_t> if_at_run_time(NodeCtx& c, uint32_t cond);
// A Loop whose condition is computed at run time: one while_loop node carrying its body as a
// closed graph (onnx_map_loop_node.cc, NOTE [ONNX Loop at run time]), from iteration `first` with
// the condition `cond` (kNone: the Loop has none) and the loop-carried values `values`.
std::vector<uint32_t> loop_at_run_time(NodeCtx& c, int64_t first, uint32_t cond, const std::vector<uint32_t>& values);

// Subgraphs as closed graphs (onnx_map_if_node.cc): the names `g` reads and does not define
// (nested subgraphs included), in the order first read, added to `out` once each; and `g` mapped
// with `leading` inputs of its own, then the outer values `outer` it reads under `names` (copied
// in where `passed` is false), returning its outputs but those named in `skip`, rewritten by
// `finish` (in the subgraph's mapper) when given.
struct ClosedInput {
  std::string name;
  DType dtype;
  Shape shape;
  Tensor hint;  // its value at the loop's entry, when known (Mapper::hints)
};
// A Slice of the model's graph that ends at a value computed at run time, and the ops that may read
// its result (NOTE [Ragged outputs], onnx_map_ragged.cc): check_ragged_reader refuses the others,
// mark_ragged_results passes the extent on, refuse_ragged_operand keeps it out of subgraphs.
bool ragged_slice_applies(NodeCtx& c);
std::vector<uint32_t> ragged_slice(NodeCtx& c);
void check_ragged_reader(NodeCtx& c);
void mark_ragged_results(NodeCtx& c, const std::vector<uint32_t>& outs);
void refuse_ragged_operand(NodeCtx& c, uint32_t id);
// Slice and Range whose starts, ends or limits change per Loop iteration (onnx_map_loop_node.cc).
std::vector<uint32_t> slice_per_iteration(NodeCtx& c);
std::vector<uint32_t> range_per_iteration(NodeCtx& c);
using ClosedFinish = std::function<std::vector<uint32_t>(NodeCtx& c, std::vector<uint32_t> results)>;
void free_names(const GraphProto& g, std::set<std::string> defined, std::vector<std::string>& out, std::set<std::string>& seen);
ir::Graph map_closed(NodeCtx& c, const GraphProto& g, const std::string& which, const std::vector<ClosedInput>& leading,
                     const std::vector<std::string>& names, const std::vector<uint32_t>& outer, const std::vector<bool>& passed,
                     const std::set<std::string>& skip, const ClosedFinish& finish);

// Maps the nodes of `graph` (the model's, or an If branch's) into m, reading and defining names
// in m.names.
void map_nodes(Mapper& m, const GraphProto& graph, const std::string& label);

// The ops each file adds to the table.
void add_layout_ops(HandlerTable& t);
void add_resize_ops(HandlerTable& t);
void add_conv_transpose_ops(HandlerTable& t);
void add_recurrent_ops(HandlerTable& t);
void add_control_ops(HandlerTable& t);
void add_math_ops(HandlerTable& t);
void add_nd_index_ops(HandlerTable& t);
void add_topk_ops(HandlerTable& t);
void add_attention_ops(HandlerTable& t);
void add_flex_attention_ops(HandlerTable& t);  // ai.onnx.preview's FlexAttention
void add_roi_align_ops(HandlerTable& t);       // onnx_map_roi_align.cc
void add_training_ops(HandlerTable& t);        // ai.onnx.preview.training's Adagrad, Adam, Momentum
void add_ml_ops(HandlerTable& t);              // ai.onnx.ml's Binarizer, ArrayFeatureExtractor (onnx_map_ml.cc)
void add_loss_ops(HandlerTable& t);
void add_trig_ops(HandlerTable& t);
void add_product_ops(HandlerTable& t);
void add_rotary_ops(HandlerTable& t);
void add_einsum_ops(HandlerTable& t);
void add_bitwise_ops(HandlerTable& t);
void add_linear_attention_ops(HandlerTable& t);
void add_grid_sample_ops(HandlerTable& t);
void add_quantize_ops(HandlerTable& t);  // after Conv: ConvInteger and QLinearConv use its mapping
void add_pool_nd_ops(HandlerTable& t);   // after MaxPool and AveragePool, which it extends
void add_signal_ops(HandlerTable& t);
void add_scatter_ops(HandlerTable& t);
void add_nms_ops(HandlerTable& t);
void add_unique_ops(HandlerTable& t);

// Convolution and pooling over 1-D or 2-D spatial inputs: a 1-D one ([N, C, L]) runs as 2-D with a
// height of 1, every per-axis attribute getting the neutral value for the height in front.
struct Spatial {
  NodeCtx& c;
  bool lifted = false;
  Spatial(NodeCtx& ctx, uint32_t x) : c(ctx) {
    const int rank = c.m.shape(x).ndim();
    if (rank != 3 && rank != 4)
      c.unsupported("a " + std::to_string(rank - 2) + "-D spatial input (Spore maps 1-D and 2-D, NCHW)");
    lifted = rank == 3;
  }
  uint32_t in(uint32_t v) const {
    if (!lifted) return v;
    const Shape& s = c.m.shape(v);
    return c.m.reshape(c, v, {s[0], s[1], 1, s[2]});
  }
  uint32_t out(uint32_t v) const {
    if (!lifted) return v;
    const Shape& s = c.m.shape(v);
    return c.m.reshape(c, v, {s[0], s[1], s[3]});
  }
  std::vector<int64_t> ints(const std::string& name, int64_t neutral) const {
    std::vector<int64_t> v = c.ints(name, lifted ? std::vector<int64_t>{neutral} : std::vector<int64_t>{neutral, neutral});
    if (v.size() != (lifted ? 1u : 2u)) c.bad(name + " has " + std::to_string(v.size()) + " values for " + (lifted ? "1" : "2") + " spatial axes");
    if (lifted) v.insert(v.begin(), neutral);
    return v;
  }
  std::vector<int64_t> pads() const {
    std::vector<int64_t> v = c.ints("pads", std::vector<int64_t>(lifted ? 2 : 4, 0));
    if (v.size() != (lifted ? 2u : 4u)) c.bad("pads has " + std::to_string(v.size()) + " values");
    return lifted ? std::vector<int64_t>{0, v[0], 0, v[1]} : v;
  }
};
}  // namespace spore::onnx::detail
