// Cell: MindSpore's module. A network is a tree of cells that own Parameters.
//
// NOTE [Mixed precision with to_float]
// to_float(dtype) sets a compute dtype on a cell and every cell under it. Parameters stay in
// their own dtype (the float32 master copy); param() casts a parameter to the compute dtype where
// the cell uses it, and operator() casts floating inputs. The casts are ordinary ops, so
// gradients flow through them back to the float32 masters and an optimizer updates those: no
// second copy to keep in sync, nothing that can crash or hang (the chapter's to_float ended in
// SIGSEGV or a hang at random).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spore/parameter.h"
#include "spore/tensor.h"

namespace spore::nn {

class Cell {
 public:
  Cell() = default;
  Cell(const Cell&) = delete;
  Cell& operator=(const Cell&) = delete;
  virtual ~Cell() = default;

  // The computation; inputs already cast to the compute dtype when one is set.
  virtual Tensor construct(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x);

  // Every parameter under this cell, depth first, named "sub.sub.param" as MindSpore does.
  std::vector<std::pair<std::string, Parameter>> named_parameters() const;
  std::vector<Parameter> parameters() const;
  std::vector<Parameter> trainable_params() const;  // those with requires_grad
  std::vector<std::pair<std::string, Cell*>> named_cells() const;  // direct children

  void set_train(bool mode = true);  // this cell and all under it
  bool training() const { return training_; }
  Cell& to_float(DType dtype);  // NOTE [Mixed precision with to_float]
  std::optional<DType> compute_dtype() const { return compute_dtype_; }
  virtual std::string name() const = 0;  // "Dense", "Conv2d", ...
  // ExecMode::kGraph: operator() runs the forward compiled on first call (include/spore/jit.h);
  // the compiled graphs are kept here, with the cell.
  std::shared_ptr<void>& graph_cache() { return graph_cache_; }

 protected:
  Parameter& register_parameter(const std::string& name, Tensor value, bool requires_grad = true);
  template <typename C>
  std::shared_ptr<C> register_cell(const std::string& name, std::shared_ptr<C> cell) {
    children_.emplace_back(name, cell);
    return cell;
  }
  // The parameter's tensor in the compute dtype (a cast op when to_float is in effect).
  Tensor param(const Parameter& p) const;

 private:
  void collect(const std::string& prefix, std::vector<std::pair<std::string, Parameter>>& out) const;
  std::vector<std::pair<std::string, Parameter>> params_;
  std::vector<std::pair<std::string, std::shared_ptr<Cell>>> children_;
  bool training_ = true;
  std::optional<DType> compute_dtype_;
  std::shared_ptr<void> graph_cache_;
};

using CellPtr = std::shared_ptr<Cell>;

// Applies its cells in order; they are named "0", "1", ... like MindSpore's SequentialCell.
class SequentialCell final : public Cell {
 public:
  explicit SequentialCell(std::vector<CellPtr> cells);
  Tensor construct(const Tensor& x) override;
  std::string name() const override { return "SequentialCell"; }
  size_t size() const { return cells_.size(); }
  Cell& operator[](size_t i) { return *cells_.at(i); }

 private:
  std::vector<CellPtr> cells_;
};

}  // namespace spore::nn
