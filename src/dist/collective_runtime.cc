// The collective ops' runtime over the world group (NOTE [Collective ops]): what the kernels of
// all_reduce, broadcast, all_gather, reduce_scatter and barrier call once dist::init() has made
// the group, and the traceable functions that dispatch those ops.
#include <cstring>
#include <memory>

#include "dist/backends.h"
#include "spore/collective.h"
#include "spore/ops.h"

namespace spore::dist {

namespace {

void copy_into(Tensor& out, const Tensor& result) {
  const Tensor r = result.contiguous();
  if (r.nbytes() != out.nbytes())
    throw Error(ErrorCode::kInternal, "dist: a collective's result has " + std::to_string(r.nbytes()) +
                                          " bytes, its op's output " + std::to_string(out.nbytes()));
  std::memcpy(out.data_ptr(), r.data_ptr(), r.nbytes());
}

bool reducible_in_place(DType d) {
  return d != DType::kBool && d != DType::kFloat16 && d != DType::kBFloat16;
}

class WorldRuntime final : public CollectiveRuntime {
 public:
  explicit WorldRuntime(ProcessGroup& group) : group_(group) {}
  int rank() const override { return group_.rank(); }
  int size() const override { return group_.size(); }
  void run(OpId op, const Tensor& input, Tensor& output, const Attrs& attrs) override {
    switch (op) {
      case OpId::k_all_reduce: {
        const ReduceOp r = (ReduceOp)attrs.i(0);
        if (!reducible_in_place(input.dtype())) return copy_into(output, group_.all_reduce(input, r, attrs.b(1)));
        // The op's own output is the buffer: one copy in, the reduction in place (the gradient
        // buckets' path, bench/dist_bench.cc's figure).
        copy_into(output, input);
        group_.all_reduce_inplace(output, r, attrs.b(1));
        return;
      }
      case OpId::k_broadcast:
        return copy_into(output, group_.broadcast(input, (int)attrs.i(0)));
      case OpId::k_all_gather:
        return copy_into(output, group_.all_gather(input));
      case OpId::k_reduce_scatter:
        return copy_into(output, group_.reduce_scatter(input, (ReduceOp)attrs.i(0)));
      case OpId::k_barrier:
        group_.barrier();
        return copy_into(output, input);
      default:
        throw Error(ErrorCode::kInternal, std::string("dist: ") + op_def(op).name + " is not a collective");
    }
  }

 private:
  ProcessGroup& group_;
};

std::unique_ptr<WorldRuntime> g_runtime;

}  // namespace

namespace detail {
void install_collective_runtime(ProcessGroup* group) {
  set_collective_runtime(nullptr);
  g_runtime = group ? std::make_unique<WorldRuntime>(*group) : nullptr;
  set_collective_runtime(g_runtime.get());
}
}  // namespace detail

Tensor all_reduce(const Tensor& x, ReduceOp op, bool in_rank_order) {
  return dispatch1(OpId::k_all_reduce, {x}, Attrs::of((int64_t)op, in_rank_order));
}
Tensor broadcast(const Tensor& x, int root) {
  return dispatch1(OpId::k_broadcast, {x}, Attrs::of((int64_t)root));
}
Tensor all_gather(const Tensor& x) {
  return dispatch1(OpId::k_all_gather, {x}, Attrs::of((int64_t)collective_size()));
}
Tensor reduce_scatter(const Tensor& x, ReduceOp op) {
  return dispatch1(OpId::k_reduce_scatter, {x}, Attrs::of((int64_t)op, (int64_t)collective_size()));
}
Tensor barrier(const Tensor& x) {
  return dispatch1(OpId::k_barrier, {x});
}

}  // namespace spore::dist
