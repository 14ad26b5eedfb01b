// Parameter: trainable state shared between a network, its optimizer and value_and_grad.
#pragma once
#include <memory>
#include <string>

#include "spore/tensor.h"

namespace spore {

// A handle: copies share one state, so an optimizer that updates a parameter updates it for the
// network and for every function that differentiates it. Updates replace the tensor (set_value),
// and value_and_grad resolves the current tensor at each call, never a stale one.
class Parameter {
 public:
  Parameter() = default;
  Parameter(Tensor value, std::string name, bool requires_grad = true);

  bool defined() const { return state_ != nullptr; }
  const Tensor& value() const;
  void set_value(Tensor value);  // same shape and dtype, else kShape / kDType
  const std::string& name() const;
  void set_name(std::string name);
  bool requires_grad() const;
  void set_requires_grad(bool on);
  bool same_as(const Parameter& o) const { return state_ == o.state_; }

 private:
  struct State {
    Tensor value;
    std::string name;
    bool requires_grad = true;
  };
  const State& state() const;
  std::shared_ptr<State> state_;
};

}  // namespace spore
