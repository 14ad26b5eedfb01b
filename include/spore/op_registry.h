// The op registry: the single place an op is defined (NOTE [Op registry]).
//
// NOTE [Op registry]
// Each op has one OpDef: its name, arity, attribute schema, which inputs join type promotion,
// an inference function (output shapes and dtypes, and the dtype the kernel computes in), an
// optional view function (ops whose outputs alias their input), its backward rule (written with
// other ops) or the declaration that it has none, the inputs it writes in place, a kernel table
// indexed by [backend][compute dtype] and optional per-backend kernel selectors (NOTE [Kernel
// selection] in docs/design.md). Eager dispatch, the capability matrix, autograd, and later graph
// tracing and IR serialisation all read this table; none keeps a list of its own.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "spore/device.h"
#include "spore/dtype.h"
#include "spore/op_list.h"
#include "spore/shape.h"
#include "spore/tensor.h"

namespace spore {

// ---- attributes ------------------------------------------------------------------------------
enum class AttrKind : uint8_t { kInt, kFloat, kBool, kDType, kInts, kString };
using AttrValue = std::variant<int64_t, double, bool, DType, std::vector<int64_t>, std::string>;
const char* attr_kind_name(AttrKind k);

struct AttrSpec {
  const char* name;
  AttrKind kind;
  // An attribute added to an op after IR files were written with it: a file whose node lacks it
  // (and every later optional one) reads with the kind's zero value (0, 0.0, false), which must
  // be the op's former behaviour (NOTE [LLM numerics]). Optional attributes come last.
  bool optional = false;
};

// Attribute values of one call, positional in the order of the op's schema.
class Attrs {
 public:
  static constexpr int kMax = 8;
  Attrs() = default;
  Attrs(std::initializer_list<AttrValue> values);
  // From a list built at run time (a file reader); kValue beyond kMax values.
  static Attrs from(std::span<const AttrValue> values);
  // Builds the values in place (a braced list copies each value twice, which for the int-list
  // attributes of reshape, permute, expand and the reductions is two allocations per call).
  template <typename... T>
  static Attrs of(T&&... values) {
    static_assert(sizeof...(T) <= kMax, "an op takes at most Attrs::kMax attributes");
    Attrs a;
    ((a.v_[a.n_++] = AttrValue(std::forward<T>(values))), ...);
    return a;
  }
  // Copies only the values in use (the tape copies the attributes of every op it records).
  Attrs(const Attrs& o) : n_(o.n_) {
    for (int i = 0; i < n_; ++i) v_[i] = o.v_[i];
  }
  Attrs& operator=(const Attrs& o) {
    if (this != &o) {
      for (int i = 0; i < o.n_; ++i) v_[i] = o.v_[i];
      for (int i = o.n_; i < n_; ++i) v_[i] = int64_t{0};
      n_ = o.n_;
    }
    return *this;
  }
  int size() const { return n_; }
  const AttrValue& operator[](int i) const { return v_[i]; }
  int64_t i(int k) const { return std::get<int64_t>(v_[k]); }
  double f(int k) const { return std::get<double>(v_[k]); }
  bool b(int k) const { return std::get<bool>(v_[k]); }
  DType dtype(int k) const { return std::get<DType>(v_[k]); }
  const std::vector<int64_t>& ints(int k) const { return std::get<std::vector<int64_t>>(v_[k]); }
  const std::string& s(int k) const { return std::get<std::string>(v_[k]); }

 private:
  std::array<AttrValue, kMax> v_{};
  int n_ = 0;
};

// ---- definitions ----------------------------------------------------------------------------
struct TensorMeta {
  Shape shape;
  DType dtype = DType::kFloat32;
};

// Small inline list of output metadata (most ops have one output).
struct Inference {
  static constexpr int kMaxOutputs = 4;
  std::array<TensorMeta, kMaxOutputs> outputs;
  int num_outputs = 1;
  // The dtype that keys the kernel table; inputs marked for promotion are cast to it first.
  DType compute = DType::kFloat32;
  // Device of the outputs, for ops with no tensor inputs (creation ops).
  Device device;
};

struct OpDef;
struct InferArgs {
  const OpDef& def;
  std::span<const Tensor> inputs;
  const Attrs& attrs;
};
using InferFn = void (*)(const InferArgs& args, Inference& out);

// View ops build outputs that alias their first input; they need no kernel.
using ViewFn = void (*)(std::span<const Tensor> inputs, const Attrs& attrs,
                        std::span<Tensor> outputs);

struct KernelCall {
  const OpDef& def;
  std::span<const Tensor> inputs;  // already on the kernel's device and in its dtype
  std::span<Tensor> outputs;       // allocated, contiguous, in the inferred dtypes
  const Attrs& attrs;
};
using KernelFn = void (*)(const KernelCall& call);

// Backward rule (autograd issue): gradients of the inputs from the gradients of the outputs,
// written with ops. An undefined tensor in the result means "no gradient for this input".
struct BackwardArgs {
  std::span<const Tensor> inputs;
  std::span<const Tensor> outputs;
  std::span<const Tensor> grad_outputs;
  const Attrs& attrs;
  // Bit i: the caller wants input i's gradient (the tape sets only the inputs it tracks). A rule
  // may skip the work for the others and return an undefined tensor there; inputs past 63 are
  // always wanted.
  uint64_t wanted = ~uint64_t{0};
  bool needs(int i) const { return i >= 64 || ((wanted >> i) & 1u) != 0; }
};
using BackwardFn = std::vector<Tensor> (*)(const BackwardArgs& args);

// NOTE [Kernel selection]: a backend may give an op a selector that sees the whole call (every
// input's dtype and shape, the attributes, the inference) and returns a kernel that takes the
// inputs as they are (no promotion casts), or nullptr to decline; the table
// kernels[backend][compute dtype] stays the fast path for everything a selector declines.
struct KernelQuery {
  const OpDef& def;
  std::span<const Tensor> inputs;
  const Attrs& attrs;
  const Inference& inference;
};
using KernelSelector = KernelFn (*)(const KernelQuery& query);

// NOTE [Op facts]: what the graph passes, the memory plan, the fused kernel and the ONNX writer
// and reader know about an op, declared on its row instead of in a switch of each. Every op
// declares every fact (tests/core/registry_test.cc fails on kUndeclared or a null ONNX name), so
// a new op is never silently left out of a pass.
//
// How the fused_elementwise kernel runs the op (src/ops/fused_program.cc types its programs by
// it, the fusion pass fuses only ops it names); kNone: the op never joins a fused group.
enum class Fusion : uint8_t {
  kUndeclared,
  kNone,
  kArith,       // binary, the operands' dtype (add, sub, mul, div, pow, maximum, minimum)
  kCompare,     // binary, bool result
  kLogical,     // binary on bool operands
  kUnaryFloat,  // unary over floating dtypes
  kUnaryKeep,   // unary over every numeric dtype (and abs over bool)
  kLogicalNot,  // unary, bool result
  kWhere,       // (bool condition, x, y)
  kCast,        // to the dtype of attribute 0
};
// The operands an op of that kind takes (0 for kNone).
constexpr int fusion_arity(Fusion k) {
  switch (k) {
    case Fusion::kUndeclared: case Fusion::kNone: return 0;
    case Fusion::kArith: case Fusion::kCompare: case Fusion::kLogical: return 2;
    case Fusion::kWhere: return 3;
    default: return 1;
  }
}
// Whether the memory plan may give the op's output the buffer of an input whose last use it is
// (same shape and dtype, NOTE [Memory planning]): yes only for kernels that read element i of
// every input before they write element i of the output, and nothing else of the output.
enum class InPlace : uint8_t { kUndeclared, kNo, kYes };
struct OpFacts {
  Fusion fusion = Fusion::kUndeclared;
  InPlace in_place = InPlace::kUndeclared;
  // The ONNX op of the same meaning with the same operands in order and no attributes: the ONNX
  // writer (src/onnx/onnx_export.cc) writes it and Lite's ONNX reader maps it back, each by the
  // op's Fusion kind. "" when there is none (the op is mapped by hand, or not at all).
  const char* onnx = nullptr;
  // Algebraic identities the simplify pass applies (src/graph/passes/algebraic.cc): x op c is x
  // when the right (left) operand is the constant c; op(op(x)) is x for an involution.
  std::optional<double> right_identity, left_identity;
  bool involution = false;
  // The op talks to the other processes of the job (NOTE [Collective ops]): every rank must run
  // it, the same number of times in the same order, so no pass folds, merges or drops such a
  // node, and no exporter writes it (ONNX and Lite run one process).
  bool collective = false;
};

struct OpDef {
  OpId id = OpId::kCount;
  const char* name = "";
  int num_inputs = 0;   // -1: variadic (at least one)
  std::vector<AttrSpec> attrs;
  uint32_t promote_mask = 0;  // bit i: input i is cast to the compute dtype before the kernel
  InferFn infer = nullptr;
  ViewFn view = nullptr;
  BackwardFn backward = nullptr;
  // NOTE [Declared effects]: whether gradients flow through the op (then it must have a backward
  // rule; ops with none say so here, e.g. comparisons, creation, the *_grad ops, updates), and
  // which inputs it writes in place (bit i: input i), so that observers, a tracer and a dead-code
  // pass know an op with no outputs still matters. The registry test holds both to the truth.
  bool differentiable = true;
  uint32_t writes_mask = 0;
  // NOTE [Control flow]: how many subgraphs a node of this op carries (while_loop: its condition
  // and its body). Such an op has no kernel: dispatch refuses it, the graph executor runs its
  // subgraphs, and passes, the IR and Lite read this to treat the node as a loop, not a kernel.
  int num_subgraphs = 0;
  OpFacts facts;  // NOTE [Op facts]
  std::array<std::array<KernelFn, kNumDTypes>, kMaxBackends> kernels{};
  std::array<KernelSelector, kMaxBackends> selectors{};

  KernelFn kernel(int backend, DType dtype) const { return kernels[backend][(int)dtype]; }
  bool writes(int input) const { return input < 32 && ((writes_mask >> input) & 1u) != 0; }
  // Compute dtypes that `backend` has a kernel for (empty for view ops, which need none).
  std::vector<DType> supported_dtypes(int backend) const;
};

// The table, built on first use: definitions from every op family, CPU kernels registered.
const OpDef& op_def(OpId id);
const OpDef* find_op(std::string_view name);  // nullptr when unknown
std::span<const OpDef> all_ops();
// Backends register kernels here (NOTE [Backends]).
void register_kernel(OpId id, int backend, DType dtype, KernelFn fn);
// Backends that need more than the compute dtype to choose a kernel (NOTE [Kernel selection]).
void register_kernel_selector(OpId id, int backend, KernelSelector fn);

// ---- dispatch -------------------------------------------------------------------------------
// Small inline list of outputs.
class TensorList {
 public:
  static constexpr int kMax = Inference::kMaxOutputs;
  int size() const { return n_; }
  Tensor& operator[](int i) { return v_[i]; }
  const Tensor& operator[](int i) const { return v_[i]; }
  void resize(int n) { n_ = n; }
  std::span<Tensor> span() { return {v_.data(), (size_t)n_}; }
  std::vector<Tensor> to_vector() const { return {v_.begin(), v_.begin() + n_}; }

 private:
  std::array<Tensor, kMax> v_;
  int n_ = 0;
};

// Runs an op eagerly: checks arity and attributes, infers, applies the precision mode, allocates
// outputs and calls the kernel. Every error is raised here, synchronously, naming the op.
TensorList dispatch(OpId id, std::span<const Tensor> inputs, const Attrs& attrs = {});
Tensor dispatch1(OpId id, std::span<const Tensor> inputs, const Attrs& attrs = {});
inline Tensor dispatch1(OpId id, std::initializer_list<Tensor> inputs, const Attrs& attrs = {}) {
  return dispatch1(id, std::span<const Tensor>(inputs.begin(), inputs.size()), attrs);
}

// NOTE [Dispatch observers]
// Observers see every dispatched op with its inputs, attributes and outputs: the hook autograd's
// tape and graph tracing attach to. Each thread has a stack of them; every op goes to each, the
// outermost first. An observer that records gradients (the tape) says so when it is built, and
// NoGradGuard hides ops from the gradient recorders pushed before it only: a tracer still sees
// every op (an optimizer's update under no-grad inside a traced training step), and a tape opened
// inside the guard still records. With no observer, dispatch pays one thread_local load.
class DispatchObserver {
 public:
  explicit DispatchObserver(bool records_gradients = false) : records_gradients_(records_gradients) {}
  virtual ~DispatchObserver() = default;
  virtual void on_op(const OpDef& def, std::span<const Tensor> inputs, const Attrs& attrs,
                     std::span<const Tensor> outputs) = 0;
  bool records_gradients() const { return records_gradients_; }

 private:
  bool records_gradients_;
};
// At most kMaxDispatchObservers per thread (pushing one more is a kValue error). pop removes the
// given observer, normally the innermost; popping one that is not pushed does nothing.
inline constexpr int kMaxDispatchObservers = 16;
void push_dispatch_observer(DispatchObserver* observer);
void pop_dispatch_observer(DispatchObserver* observer) noexcept;
int num_dispatch_observers();  // on this thread
// Tells this thread's observers about an op that ran outside dispatch: a node with subgraphs
// (while_loop) whose work ran as other ops, so a tracer records the node and a tape sees it.
void notify_dispatch_observers(const OpDef& def, std::span<const Tensor> inputs, const Attrs& attrs,
                               std::span<const Tensor> outputs);
// How many eager dispatches are in progress on this thread: an observer that wants only the
// calls its caller made (a graph tracer), not the casts and ops a kernel dispatches inside
// another op, keeps those at the depth it started at plus one.
int dispatch_depth();

// Pushes an observer for the guard's scope.
class DispatchObserverGuard {
 public:
  explicit DispatchObserverGuard(DispatchObserver* observer) : observer_(observer) {
    push_dispatch_observer(observer);
  }
  ~DispatchObserverGuard() { pop_dispatch_observer(observer_); }
  DispatchObserverGuard(const DispatchObserverGuard&) = delete;
  DispatchObserverGuard& operator=(const DispatchObserverGuard&) = delete;

 private:
  DispatchObserver* observer_;
};

// NoGradGuard's mechanism: the gradient recorders now on this thread's stack see no ops until
// the returned token is given back (tokens nest, last in first out).
int pause_gradient_recording();
void resume_gradient_recording(int token) noexcept;

// Error helper for inference functions: throws kShape/kDType/... prefixed with the op's name.
[[noreturn]] void op_error(const OpDef& def, ErrorCode code, const std::string& what);
std::string describe_inputs(std::span<const Tensor> inputs);  // "float32[2, 3], int64[4]"

}  // namespace spore
