// spore._spore.dist: MindSpore's communication and data-parallel API over spore::dist
// (NOTE [Distributed training in Python] in docs/design.md). Built where spore_dist is (MPI
// found); python/spore/communication, nn/grad_reducer.py and dataset/samplers.py call it.
#include <pybind11/functional.h>

#include "spore/bindings.h"
#include "spore/dist.h"
#include "spore/jit.h"
#include "spore/ops.h"

namespace py = pybind11;

namespace spore::py_bind {
namespace {

dist::ReduceOp reduce_op_of(const std::string& name) {
  if (name == "sum") return dist::ReduceOp::kSum;
  if (name == "mean") return dist::ReduceOp::kMean;
  if (name == "max") return dist::ReduceOp::kMax;
  throw Error(ErrorCode::kValue, "all_reduce: op must be \"sum\", \"mean\" or \"max\", got \"" + name + "\"");
}

std::vector<Parameter> handles_of(const std::vector<PyParameter*>& ps, const char* who) {
  std::vector<Parameter> out;
  for (PyParameter* p : ps) {
    if (!p) throw Error(ErrorCode::kValue, std::string(who) + ": None in the parameter list");
    out.push_back(p->handle);
  }
  return out;
}

// nn.DistributedGradReducer's engine: GradBuckets over the optimizer's parameters. Two ways in:
// reduce(grads) after backward (MindSpore's order: grad_fn, then the reducer), and
// value_and_grad(f, weights), whose backward reports each weight's final gradient to the buckets
// so their all-reduces start during backward; finish() then waits for them.
class GradReducer {
 public:
  GradReducer(std::vector<PyParameter*> params, bool mean, int64_t bucket_bytes, bool in_rank_order)
      : params_(handles_of(params, "DistributedGradReducer")) {
    dist::DdpOptions o;
    o.bucket_bytes = bucket_bytes;
    o.gradients_mean = mean;
    o.in_rank_order = in_rank_order;
    buckets_ = std::make_shared<dist::GradBuckets>(dist::world(), params_, o);
  }

  // Rank 0's values into every rank's parameters, in place (Python's Parameter objects hold the
  // value tensor itself, so it must stay the same tensor).
  void broadcast_parameters() {
    dist::ProcessGroup& g = dist::world();
    std::vector<dist::Work> pending;
    for (const Parameter& p : params_) pending.push_back(g.ibroadcast(p.value(), 0));
    for (size_t i = 0; i < params_.size(); ++i) params_[i].value().copy_(pending[i].wait());
  }

  std::vector<Tensor> reduce(const std::vector<Tensor>& grads) {
    if (grads.size() != params_.size())
      throw Error(ErrorCode::kValue, "DistributedGradReducer: " + std::to_string(grads.size()) +
                                         " gradients for " + std::to_string(params_.size()) +
                                         " parameters; pass the gradients of the parameters it was built with");
    drop_pending();
    // Inside a jit trace the buckets are reduced by ops, one all_reduce node per bucket (NOTE
    // [Data parallelism in graph mode]): an eager all-reduce would run once, at trace time, and
    // the compiled step would replay its result.
    if (graph::is_tracing()) return in_param_dtypes(buckets_->reduce_with_ops(grads));
    buckets_->begin_step();
    for (size_t k = grads.size(); k-- > 0;) buckets_->grad_ready(k, grads[k]);
    return in_param_dtypes(buckets_->finish());
  }

  GradFn value_and_grad(py::function f, const std::vector<PyParameter*>& weights) {
    std::vector<Parameter> ws = handles_of(weights, "value_and_grad");
    bool same = ws.size() == params_.size();
    for (size_t i = 0; same && i < ws.size(); ++i) same = ws[i].same_as(params_[i]);
    if (!same)
      throw Error(ErrorCode::kValue, "DistributedGradReducer: value_and_grad's weights are not the reducer's "
                                     "parameters in the same order");
    auto buckets = buckets_;
    auto inner = spore::value_and_grad(python_loss_fn(std::move(f)), GradPosition::none(), ws, std::nullopt,
                                       [buckets](size_t i, const Tensor& g) {
                                         if (!graph::is_tracing()) buckets->grad_ready(i, g);
                                       });
    return GradFn{[this, inner = std::move(inner)](const std::vector<Tensor>& in) {
      // Traced: this rank's own gradients, nothing in flight; the reducer, handed them, finds no
      // step pending and reduces them with ops (reduce() above).
      if (graph::is_tracing()) return inner(in);
      drop_pending();
      buckets_->begin_step();
      pending_ = true;
      return inner(in);  // the rank's own gradients; the buckets are in flight
    }};
  }

  bool pending() const { return pending_; }

  std::vector<Tensor> finish() {
    if (!pending_)
      throw Error(ErrorCode::kInternal, "DistributedGradReducer: finish() without a step in flight");
    pending_ = false;
    return in_param_dtypes(buckets_->finish());
  }

  size_t num_buckets() const { return buckets_->num_buckets(); }
  size_t launched_during_backward() const { return buckets_->launched_during_backward(); }

 private:
  // A step whose gradients nobody collected: its all-reduces were started on every rank alike,
  // so completing them here keeps the ranks' sequences of collectives the same.
  void drop_pending() {
    if (pending_) finish();
  }
  // 16-bit gradients are summed in float32 (GradBuckets); the optimizer gets the parameter's dtype.
  std::vector<Tensor> in_param_dtypes(std::vector<Tensor> grads) const {
    for (size_t k = 0; k < grads.size(); ++k)
      if (grads[k].dtype() != params_[k].value().dtype()) grads[k] = cast(grads[k], params_[k].value().dtype());
    return grads;
  }

  std::vector<Parameter> params_;
  std::shared_ptr<dist::GradBuckets> buckets_;
  bool pending_ = false;
};

}  // namespace

void bind_dist(py::module_& root) {
  py::module_ m = root.def_submodule("dist", "collectives over MPI and data parallelism (spore::dist)");
  m.attr("available") = true;
  m.def("init", [](bool allow_single_process) {
    dist::InitOptions o;
    o.allow_single_process = allow_single_process;
    dist::init(o);
  }, py::arg("allow_single_process") = false);
  m.def("is_initialized", &dist::is_initialized);
  m.def("get_rank", &dist::get_rank);
  m.def("get_group_size", &dist::get_group_size);
  m.def("finalize", [] {
    py::gil_scoped_release nogil;
    dist::finalize();
  });
  m.def("backend_name", [] { return std::string(dist::world().backend_name()); });
  // Blocking collectives on whole tensors (ops.AllReduce and friends), as registry ops (NOTE
  // [Collective ops]): a jit trace records them as graph nodes, the tape differentiates them. The
  // GIL is held, as every rank runs one Python thread that waits for the others anyway.
  m.def("all_reduce", [](const Tensor& x, const std::string& op) {
    dist::world();  // kValue before init
    return dist::all_reduce(x, reduce_op_of(op));
  }, py::arg("x"), py::arg("op") = "sum");
  m.def("broadcast", [](const Tensor& x, int root) {
    dist::world();
    return dist::broadcast(x, root);
  }, py::arg("x"), py::arg("root") = 0);
  m.def("all_gather", [](const Tensor& x) {
    dist::world();
    return dist::all_gather(x);
  });
  m.def("barrier", [] { dist::world().barrier(); });

  py::class_<GradReducer>(m, "GradReducer", py::module_local())
      .def(py::init<std::vector<PyParameter*>, bool, int64_t, bool>(), py::arg("params"), py::arg("mean"),
           py::arg("bucket_bytes"), py::arg("in_rank_order") = false)
      .def("broadcast_parameters", &GradReducer::broadcast_parameters)
      .def("reduce", &GradReducer::reduce)
      .def("value_and_grad", &GradReducer::value_and_grad, py::keep_alive<0, 1>())
      .def_property_readonly("pending", &GradReducer::pending)
      .def("finish", &GradReducer::finish)
      .def_property_readonly("num_buckets", &GradReducer::num_buckets)
      .def_property_readonly("launched_during_backward", &GradReducer::launched_during_backward);

  py::class_<dist::DistributedSampler>(m, "DistributedSampler", py::module_local())
      .def(py::init<int64_t, int, int, bool, uint64_t, bool>(), py::arg("dataset_size"), py::arg("num_replicas"),
           py::arg("rank"), py::arg("shuffle") = true, py::arg("seed") = 0, py::arg("drop_last") = false)
      .def("set_epoch", &dist::DistributedSampler::set_epoch)
      .def_property_readonly("epoch", &dist::DistributedSampler::epoch)
      .def_property_readonly("num_samples", &dist::DistributedSampler::num_samples)
      .def("indices", &dist::DistributedSampler::indices)
      .def("dataset", [](const dist::DistributedSampler& s, py::object source, std::vector<std::string> columns) {
        return s.dataset(python_random_access(std::move(source)), std::move(columns));
      });
}

}  // namespace spore::py_bind
