#include "spore/nn/cell.h"

#include <set>

#include "nn/cell_jit.h"
#include "spore/context.h"
#include "spore/jit.h"
#include "spore/ops.h"

namespace spore::nn {

Tensor Cell::operator()(const Tensor& x) {
  // Graph mode compiles the forward on first call; while that trace runs, the cell runs eagerly.
  if (context().mode == ExecMode::kGraph && !graph::is_tracing()) return call_compiled(*this, x);
  if (compute_dtype_ && is_floating(x.dtype()) && x.dtype() != *compute_dtype_)
    return construct(cast(x, *compute_dtype_));
  return construct(x);
}

Parameter& Cell::register_parameter(const std::string& name, Tensor value, bool requires_grad) {
  for (auto& [n, p] : params_)
    if (n == name) throw Error(ErrorCode::kValue, this->name() + ": parameter '" + name + "' registered twice");
  params_.emplace_back(name, Parameter(std::move(value), name, requires_grad));
  return params_.back().second;
}

Tensor Cell::param(const Parameter& p) const {
  const Tensor& v = p.value();
  if (compute_dtype_ && is_floating(v.dtype()) && v.dtype() != *compute_dtype_) return cast(v, *compute_dtype_);
  return v;
}

void Cell::collect(const std::string& prefix, std::vector<std::pair<std::string, Parameter>>& out) const {
  for (const auto& [n, p] : params_) out.emplace_back(prefix + n, p);
  for (const auto& [n, c] : children_) c->collect(prefix + n + ".", out);
}

std::vector<std::pair<std::string, Parameter>> Cell::named_parameters() const {
  std::vector<std::pair<std::string, Parameter>> all, out;
  collect("", all);
  // A parameter shared by two cells (tied weights) is listed once, under its first name.
  for (auto& [n, p] : all) {
    bool dup = false;
    for (auto& [m, q] : out) dup = dup || q.same_as(p);
    if (!dup) out.emplace_back(n, p);
  }
  return out;
}

std::vector<Parameter> Cell::parameters() const {
  std::vector<Parameter> out;
  for (auto& [n, p] : named_parameters()) out.push_back(p);
  return out;
}

std::vector<Parameter> Cell::trainable_params() const {
  std::vector<Parameter> out;
  for (auto& [n, p] : named_parameters())
    if (p.requires_grad()) out.push_back(p);
  return out;
}

std::vector<std::pair<std::string, Cell*>> Cell::named_cells() const {
  std::vector<std::pair<std::string, Cell*>> out;
  for (auto& [n, c] : children_) out.emplace_back(n, c.get());
  return out;
}

void Cell::set_train(bool mode) {
  training_ = mode;
  for (auto& [n, c] : children_) c->set_train(mode);
}

Cell& Cell::to_float(DType dtype) {
  if (!is_floating(dtype))
    throw Error(ErrorCode::kDType, name() + ".to_float: " + dtype_name(dtype) + " is not a floating dtype");
  compute_dtype_ = dtype;
  for (auto& [n, c] : children_) c->to_float(dtype);
  return *this;
}

SequentialCell::SequentialCell(std::vector<CellPtr> cells) : cells_(std::move(cells)) {
  for (size_t i = 0; i < cells_.size(); ++i) {
    if (!cells_[i]) throw Error(ErrorCode::kValue, "SequentialCell: cell " + std::to_string(i) + " is null");
    register_cell(std::to_string(i), cells_[i]);
  }
}

Tensor SequentialCell::construct(const Tensor& x) {
  Tensor h = x;
  for (auto& c : cells_) h = (*c)(h);
  return h;
}

}  // namespace spore::nn
