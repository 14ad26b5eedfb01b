// Sample 04_graph_mode (chapter 5.7): the chapter's scaled_add, (a + b) * scale, run eagerly and
// compiled with spore::jit (MindSpore's @ms.jit), gives 13.0 both ways. The compiled result is
// the graph's own run (the second call, a cache hit), not the trace's eager answer, and both are
// read back from the device. The chapter's warning, that graph mode differs from eager in silence
// when code branches on a tensor's value, is shown as the error Spore raises instead.
#include <string>

#include "spore/jit.h"
#include "spore/ops.h"
#include "spore/probe.h"

namespace {
using namespace spore;

Tensor scaled_add(const Tensor& a, const Tensor& b, double scale) { return mul(add(a, b), scale); }

void sample(probe::ProbeContext& ctx) {
  const Device dev = ctx.device();
  Tensor a = Tensor::from_vector<float>({1.5f}, Shape{1}, dev);
  Tensor b = Tensor::from_vector<float>({5.0f}, Shape{1}, dev);
  ctx.compare("eager: (a + b) * 2", scaled_add(a, b, 2.0), {13.0}, 0);

  // scale is a static argument: part of the cache key, as a Python scalar is for @ms.jit.
  JitFunction f = jit(TensorsStaticFn([](const std::vector<Tensor>& in, const StaticArgs& s) {
    return std::vector<Tensor>{scaled_add(in[0], in[1], std::get<double>(s[0]))};
  }), JitOptions{.name = "scaled_add"});
  Tensor traced = f({a, b}, {AttrValue(2.0)})[0];
  Tensor compiled = f({a, b}, {AttrValue(2.0)})[0];
  ctx.compare("graph (jit), first call: traced", traced, {13.0}, 0);
  ctx.compare("graph (jit), second call: the compiled graph", compiled, {13.0}, 0);
  ctx.value("jit cache hits", f.stats().hits);
  ctx.value("jit cache misses", f.stats().misses);
  ctx.value("trace ms", f.stats().last_trace_ms);
  ctx.value("compile ms", f.stats().last_compile_ms);
  ctx.value("graph", graph::dump(*f.last_graph()));
  if (f.stats().hits != 1 || f.stats().misses != 1)
    ctx.fail("the second call did not run the cached graph (hits " + std::to_string(f.stats().hits) + ")");

  // A branch on a tensor's value cannot be traced: Spore says so instead of baking in one branch.
  JitFunction branchy = jit(TensorFn([](const std::vector<Tensor>& in) {
    if (sum(in[0]).item<float>() > 0) return mul(in[0], 2.0);
    return neg(in[0]);
  }), JitOptions{.name = "branchy"});
  try {
    branchy({a});
    ctx.fail("a data-dependent branch was traced without an error");
  } catch (const Error& e) {
    ctx.value("data-dependent branch under jit", std::string(e.what()));
    if (e.code() != ErrorCode::kValue) ctx.fail(std::string("unexpected error kind: ") + e.what());
  }
}
}  // namespace

SPORE_REGISTER_PROBE({"04_graph_mode", "sample", "one function in eager and graph mode gives 13.0 both ways", "", &sample});
