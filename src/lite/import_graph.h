// The graph builder both model importers (onnx_import.cc, mindir_import.cc) map onto: an
// ir::Graph grown value by value, each value with a probe tensor (a placeholder, or the data of a
// constant) that the registry's shape inference runs on as the mapping goes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "spore/error.h"
#include "spore/ir.h"
#include "spore/ops.h"

namespace spore::lite {

inline constexpr int64_t kMaxElements = int64_t{1} << 40;       // a tensor larger than this is a hostile shape
inline constexpr int64_t kMaxValueElements = int64_t{1} << 31;  // per computed value

// The element count of a shape read from a file, refused (naming `what`) over kMaxDims dimensions
// or 2^40 elements, or when it overflows; negative(d) refuses a negative extent d (it throws).
template <typename Dims, typename OnNegative>
int64_t checked_numel(const Dims& dims, const std::string& what, OnNegative&& negative) {
  if ((int)dims.size() > kMaxDims)
    throw Error(ErrorCode::kUnsupported, what + " has " + std::to_string(dims.size()) +
                                             " dimensions; Spore tensors have at most " + std::to_string(kMaxDims));
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) negative(d);
    if (d != 0 && n > kMaxElements / d) throw Error(ErrorCode::kFormat, what + " has a shape whose element count overflows");
    n *= d;
  }
  if (n > kMaxElements) throw Error(ErrorCode::kFormat, what + " has more than 2^40 elements");
  return n;
}

struct GraphBuilder {
  ir::Graph g;
  std::vector<Tensor> probe;  // per value: a placeholder (or the data, for constants) for inference

  uint32_t push(ir::Value v, Tensor p);
  static std::vector<ir::Dim> dims_of(const Shape& s);
  // A placeholder of this shape: one element broadcast (stride 0), for shape inference only.
  static Tensor placeholder(const Shape& s, DType dtype);
  uint32_t constant(Tensor t, ir::ValueKind kind = ir::ValueKind::kConstant, std::string name = {});
  const Tensor& meta(uint32_t id) const { return probe[id]; }
  const Shape& shape(uint32_t id) const { return probe[id].shape(); }
  DType dtype(uint32_t id) const { return probe[id].dtype(); }

  // The probes of `ins`, and the registry's inference of `def` on them; an error is rethrown
  // with `where` (the node being mapped) in front.
  std::vector<Tensor> probes(const std::vector<uint32_t>& ins) const;
  static Inference infer(const std::string& where, const OpDef& def, const std::vector<Tensor>& ts, const Attrs& attrs);
  // Appends the node `def(ins)` with the first `n_outputs` of the inferred outputs as new values
  // (refused over kMaxValueElements, so that a hostile shape is never an allocation Lite attempts).
  std::vector<uint32_t> add_node(const std::string& where, const OpDef& def, const std::vector<uint32_t>& ins, const Attrs& attrs,
                                 const Inference& inf, int n_outputs);
  // Appends a node of a control-flow op (while_loop, if_else), whose results may be more than
  // Inference holds (NOTE [Control-flow results]).
  std::vector<uint32_t> add_control_node(const std::string& where, const OpDef& def, const std::vector<uint32_t>& ins,
                                         const Attrs& attrs);
};

}  // namespace spore::lite
