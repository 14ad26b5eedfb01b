// Convolution through oneDNN primitives: forward, backward data, backward weights.
//
// NOTE [oneDNN convolution]
// * Same rules as NOTE [oneDNN matmul] (matmul_dnnl.cc): primitives are cached by everything
//   that shapes them (pass, data type, every extent, stride, padding, dilation, groups and the
//   thread count), refusals are cached too; engine, streams, scratchpads and the OpenMP thread
//   count are NOTE [oneDNN runtime] (dnnl_runtime.h).
// * Tensors stay in Spore's plain layouts (nchw, oihw / goihw for groups): no reorders, so the
//   output lands directly in the op's output buffer. oneDNN picks its gemm-based implementation
//   for these layouts; blocked layouts would be faster for large channel counts but cost two
//   reorders per call, which small edge-sized problems do not win back.
// * oneDNN's dilation counts the gaps between taps (PyTorch's dilation - 1); right padding equals
//   left padding (the output extent is PyTorch's floor formula, which oneDNN checks).
// * Determinism: reproducible for a given thread count; between thread counts the gradient of
//   the weights may be reduced in a different order (last-bit differences).
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "conv_internal.h"
#include "dnnl_runtime.h"
#include "pool_region.h"
#include "spore/context.h"

namespace spore::cpu {

namespace {

using dnnl::memory;
using Dims = memory::dims;
using Tag = memory::format_tag;

using dnnl_rt::engine;  // NOTE [oneDNN runtime]

struct Entry {
  dnnl::primitive prim;
  memory::desc src, wei, dst, scratch;  // src/dst: the input and output images of the forward
};

using Key = std::array<int64_t, 20>;

Key key_of(ConvPass pass, const ops::ConvGeometry& g, bool bf16, int threads) {
  return {(int64_t)pass, bf16, g.n,  g.c,  g.h,  g.w,      g.o,     g.kh, g.kw, g.sh,
          g.sw,          g.ph, g.pw, g.dh, g.dw, g.groups, threads, 0,    0,    0};
}

std::unique_ptr<Entry> create(ConvPass pass, const ops::ConvGeometry& g, bool bf16) {
  const memory::data_type dt = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  auto e = std::make_unique<Entry>();
  e->src = memory::desc(Dims{g.n, g.c, g.h, g.w}, dt, Tag::nchw);
  e->dst = memory::desc(Dims{g.n, g.o, g.ho, g.wo}, dt, Tag::nchw);
  e->wei = g.groups == 1 ? memory::desc(Dims{g.o, g.c, g.kh, g.kw}, dt, Tag::oihw)
                         : memory::desc(Dims{g.groups, g.og(), g.cg(), g.kh, g.kw}, dt, Tag::goihw);
  const Dims strides{g.sh, g.sw}, dilates{g.dh - 1, g.dw - 1}, pad{g.ph, g.pw};
  const auto algo = dnnl::algorithm::convolution_direct;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);

  const auto prop = pass == ConvPass::kForward ? dnnl::prop_kind::forward_inference
                                               : dnnl::prop_kind::forward_training;
  dnnl::convolution_forward::primitive_desc fwd(
      dnnl::convolution_forward::desc(prop, algo, e->src, e->wei, e->dst, strides, dilates, pad,
                                      pad),
      attr, engine());
  switch (pass) {
    case ConvPass::kForward:
      e->scratch = fwd.scratchpad_desc();
      e->prim = dnnl::convolution_forward(fwd);
      break;
    case ConvPass::kGradInput: {
      dnnl::convolution_backward_data::primitive_desc pd(
          dnnl::convolution_backward_data::desc(algo, e->src, e->wei, e->dst, strides, dilates, pad,
                                                pad),
          attr, engine(), fwd);
      e->scratch = pd.scratchpad_desc();
      e->prim = dnnl::convolution_backward_data(pd);
      break;
    }
    case ConvPass::kGradWeight: {
      dnnl::convolution_backward_weights::primitive_desc pd(
          dnnl::convolution_backward_weights::desc(algo, e->src, e->wei, e->dst, strides, dilates,
                                                   pad, pad),
          attr, engine(), fwd);
      e->scratch = pd.scratchpad_desc();
      e->prim = dnnl::convolution_backward_weights(pd);
      break;
    }
  }
  return e;
}

// The cached primitive for this problem, or nullptr when oneDNN refuses it.
const Entry* primitive(ConvPass pass, const ops::ConvGeometry& g, bool bf16, int threads) {
  static std::mutex mu;
  static std::map<Key, std::unique_ptr<Entry>> cache;  // refusals are cached as nullptr
  const Key key = key_of(pass, g, bf16, threads);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second.get();
  if (cache.size() >= 512) cache.clear();  // a bound, not a policy: shapes rarely vary that much
  std::unique_ptr<Entry> e;
  try {
    e = create(pass, g, bf16);
  } catch (const dnnl::error&) {
    e.reset();
  }
  return (cache[key] = std::move(e)).get();
}

}  // namespace

bool conv_dnnl(ConvPass pass, const ops::ConvGeometry& g, bool bf16, const void* a, const void* b,
               void* out) {
  const int threads = onednn_threads();  // 1 inside a pool chunk (NOTE [Threads that sleep])
  const Entry* e = primitive(pass, g, bf16, threads);
  if (!e) return false;
  dnnl_rt::set_threads(threads);
  const auto mem = &dnnl_rt::memory;
  std::unordered_map<int, memory> args;
  switch (pass) {
    case ConvPass::kForward:
      args.emplace(DNNL_ARG_SRC, mem(e->src, a));
      args.emplace(DNNL_ARG_WEIGHTS, mem(e->wei, b));
      args.emplace(DNNL_ARG_DST, mem(e->dst, out));
      break;
    case ConvPass::kGradInput:
      args.emplace(DNNL_ARG_DIFF_DST, mem(e->dst, a));
      args.emplace(DNNL_ARG_WEIGHTS, mem(e->wei, b));
      args.emplace(DNNL_ARG_DIFF_SRC, mem(e->src, out));
      break;
    case ConvPass::kGradWeight:
      args.emplace(DNNL_ARG_DIFF_DST, mem(e->dst, a));
      args.emplace(DNNL_ARG_SRC, mem(e->src, b));
      args.emplace(DNNL_ARG_DIFF_WEIGHTS, mem(e->wei, out));
      break;
  }
  try {
    dnnl_rt::execute(e->prim, e->scratch, args);
  } catch (const dnnl::error&) {
    return false;  // the caller's direct kernel overwrites the whole output
  }
  return true;
}

}  // namespace spore::cpu
