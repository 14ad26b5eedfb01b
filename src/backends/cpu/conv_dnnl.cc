// Convolution through oneDNN primitives: forward, backward data, backward weights.
//
// NOTE [oneDNN convolution]
// * Same rules as NOTE [oneDNN matmul] (matmul_dnnl.cc): primitives are cached by everything
//   that shapes them (pass, data type, every extent, stride, padding, dilation, groups and the
//   thread count), refusals are cached too; engine, streams, scratchpads and the OpenMP thread
//   count are NOTE [oneDNN runtime] (dnnl_runtime.h).
// * Tensors stay in Spore's plain layouts (nchw, oihw / goihw for groups). For those layouts
//   oneDNN picks its gemm-based implementation, which runs spatial kernels badly: a 3x3 over
//   96 -> 24 channels at 80x120 (PP-OCRv6) at 14 GMAC/s on one AVX-512 core, where its direct
//   convolution over blocked layouts (nChw16c; nChw8c at AVX2) ran the same problem at 32 GMAC/s
//   with the three reorders counted. So a forward float32 convolution with a kernel larger than
//   1x1, no groups, at least kBlockedMacs multiply-adds and kBlockedPixels output pixels lets
//   oneDNN choose its layouts, and the input and weights are reordered in and the output out on
//   each call (per-thread buffers); a read-only weight's reordered copy is kept in its storage
//   instead (NOTE [Derived forms]). 1x1 convolutions stay plain: there the gemm is oneDNN's best
//   (86 against 31 GMAC/s blocked). oneDNN 2.6's blocked path is brgconv over nhwc
//   (onednn_verbose), not nChw16c.
// * oneDNN's dilation counts the gaps between taps (PyTorch's dilation - 1); right padding equals
//   left padding (the output extent is PyTorch's floor formula, which oneDNN checks).
// * Determinism: reproducible for a given thread count; between thread counts the gradient of
//   the weights may be reduced in a different order (last-bit differences).
#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "conv_internal.h"
#include "dnnl_runtime.h"
#include "pool_region.h"
#include "thread_pool.h"
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
  // A forward over oneDNN's own layouts: prim reads bsrc/bwei and writes bdst, which the
  // reorders fill from the plain tensors and empty into the plain output.
  bool blocked = false;
  memory::desc bsrc, bwei, bdst, to_bsrc_scratch, to_bwei_scratch, from_bdst_scratch;
  dnnl::primitive to_bsrc, to_bwei, from_bdst;
};

// Below this many multiply-adds the reorders cost more than the blocked convolution saves. The
// output must be at least kBlockedPixels pixels, or at least kBlockedSide on each side: with
// 16 x 16 squares blocked too, YOLOv8n (nudenet) ran 25.6 -> 23.4 ms at one thread and 20.6 ->
// 19.6 at two (its 20x20 heads; a 64 -> 64 3x3 at 20x20 1.33 -> 0.86 ms for four). 8 x 8 too
// since oneDNN's blocked path became brgconv over nhwc (onednn_verbose): YOLOv8n's 10 x 10 3x3s
// ran at 28-40 GMAC/s through the plain gemm, 70-80 blocked; the model 17.7 -> 16.2 ms at two
// threads (it had gained nothing and lost at two threads when the reorders were planned for two
// and run on one, below). A 1-D output (one row or one column) is never blocked:
// magika's 5-tap convolution (256 -> 512 channels, 508 x 1) took 17 ms blocked against 5 ms
// plain, and 128 -> 128 over 2048 x 1 7.4 against 4.1 ms (1.8x at two threads as well). (An
// earlier 32 x 32 floor was measured while the reorders were planned for two threads and run on
// one: 3-5x slower.)
constexpr int64_t kBlockedMacs = int64_t{1} << 20;
// A convolution under this many multiply-adds runs on the calling thread alone, above
// onednn_threads's general 2^20: waking the OpenMP team (its workers sleep, NOTE [Threads that
// sleep]) took longer than a small convolution's second half. openWakeWord's embedding CNN (20
// convolutions of 2-12 M multiply-adds, 40-55 us each) ran 2.7 ms at two threads against 1.8 at
// one; with this floor 1.85 ms, while YOLOv8n, PP-OCRv4's detector and PicoDet kept their
// two-thread times (16 M lost 1 ms on YOLOv8n).
constexpr int64_t kSerialConvMacs = int64_t{1} << 22;
constexpr int64_t kBlockedPixels = 32 * 32, kBlockedSide = 8;

bool wants_blocked(ConvPass pass, const ops::ConvGeometry& g, bool bf16) {
  const bool large = g.ho * g.wo >= kBlockedPixels || (g.ho >= kBlockedSide && g.wo >= kBlockedSide);
  return pass == ConvPass::kForward && !bf16 && g.groups == 1 && g.kh * g.kw > 1 && g.ho > 1 && g.wo > 1 && large &&
         g.n * g.o * g.ho * g.wo * g.c * g.kh * g.kw >= kBlockedMacs;
}

dnnl::primitive reorder_of(const memory::desc& from, const memory::desc& to, const dnnl::primitive_attr& attr,
                           memory::desc& scratch) {
  dnnl::reorder::primitive_desc pd(engine(), from, engine(), to, attr);
  scratch = pd.scratchpad_desc();
  return dnnl::reorder(pd);
}

// Sets up e as a blocked forward; false (e untouched) when oneDNN keeps the plain layouts.
bool try_blocked(Entry& e, const ops::ConvGeometry& g, const dnnl::primitive_attr& attr) {
  const Dims strides{g.sh, g.sw}, dilates{g.dh - 1, g.dw - 1}, pad{g.ph, g.pw};
  const auto f32 = memory::data_type::f32;
  const memory::desc src(Dims{g.n, g.c, g.h, g.w}, f32, Tag::any), wei(Dims{g.o, g.c, g.kh, g.kw}, f32, Tag::any),
      dst(Dims{g.n, g.o, g.ho, g.wo}, f32, Tag::any);
  dnnl::convolution_forward::primitive_desc fwd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src,
                                      wei, dst, strides, dilates, pad, pad),
      attr, engine());
  if (fwd.src_desc() == e.src && fwd.weights_desc() == e.wei && fwd.dst_desc() == e.dst) return false;
  e.bsrc = fwd.src_desc(), e.bwei = fwd.weights_desc(), e.bdst = fwd.dst_desc();
  e.scratch = fwd.scratchpad_desc();
  e.prim = dnnl::convolution_forward(fwd);
  // The reorders run on the calling thread alone (conv_dnnl), so they are planned for one: planned
  // for two and run on one, each took 3-5x as long (0.07 against 0.012-0.03 ms at 64 x 40 x 40).
  dnnl_rt::set_threads(1);
  e.to_bsrc = reorder_of(e.src, e.bsrc, attr, e.to_bsrc_scratch);
  e.to_bwei = reorder_of(e.wei, e.bwei, attr, e.to_bwei_scratch);
  e.from_bdst = reorder_of(e.bdst, e.dst, attr, e.from_bdst_scratch);
  e.blocked = true;
  return true;
}

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
  if (wants_blocked(pass, g, bf16)) {
    try {
      if (try_blocked(*e, g, attr)) return e;
    } catch (const dnnl::error&) {
      // the plain layouts below
    }
  }

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
    // oneDNN plans a primitive's partitioning for the OpenMP thread count current when it is
    // created (the brgemm convolutions keep that plan): created under a count of 1, left by the
    // last reorder, a two-thread convolution ran on one.
    dnnl_rt::set_threads(threads);
    e = create(pass, g, bf16);
  } catch (const dnnl::error&) {
    e.reset();
  }
  return (cache[key] = std::move(e)).get();
}

// NOTE [oneDNN on the pool], convolutions: a blocked forward of one image cut by output channels
// into one slab per pool thread (16-channel multiples), each the single-threaded blocked forward
// of its channels (its own reorders of the input, of its weights' rows and of its output planes).
// False, with the output to be rewritten, when a slab could not run.
bool blocked_on_pool(const ops::ConvGeometry& g, const float* a, const float* b, float* out, int threads,
                     const Storage* b_storage) {
  const Slabs cut = cut_into_slabs(g.o, threads, 16);
  if (cut.count < 2) return false;
  std::atomic<bool> ok{true};
  parallel_for(cut.count, 1, [&](int64_t first, int64_t last) {
    for (int64_t s = first; s < last; ++s) {
      ops::ConvGeometry part = g;
      const int64_t o0 = s * cut.step;
      part.o = cut.width(s, g.o);
      if (!conv_dnnl(ConvPass::kForward, part, false, a, b + o0 * g.c * g.kh * g.kw, out + o0 * g.ho * g.wo, b_storage))
        ok = false;
    }
  });
  return ok;
}

}  // namespace

bool conv_blocked_forward(const ops::ConvGeometry& g) { return wants_blocked(ConvPass::kForward, g, false); }

bool conv_dnnl(ConvPass pass, const ops::ConvGeometry& g, bool bf16, const void* a, const void* b,
               void* out, const Storage* b_storage) {
  const int64_t macs = g.n * g.o * g.ho * g.wo * g.cg() * g.kh * g.kw;
  const int pool = onednn_threads(macs);  // NOTE [Threads that sleep]
  if (pool > 1 && g.n == 1 && wants_blocked(pass, g, bf16) &&
      blocked_on_pool(g, static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(out), pool,
                      b_storage))
    return true;
  const int threads = macs < kSerialConvMacs ? 1 : pool;
  const Entry* e = primitive(pass, g, bf16, threads);
  if (!e) return false;
  dnnl_rt::set_threads(threads);
  const auto mem = &dnnl_rt::memory;
  std::unordered_map<int, memory> args;
  if (e->blocked) {
    // Per-thread buffers for the blocked tensors, grown and kept (a cached primitive may run on
    // several threads at once).
    thread_local std::vector<float> bx, bw, by;
    auto grown = [](std::vector<float>& v, const memory::desc& d) {
      const size_t n = (d.get_size() + sizeof(float) - 1) / sizeof(float);
      if (v.size() < n) v.resize(n);
      return v.data();
    };
    const memory x = mem(e->bsrc, grown(bx, e->bsrc)), w = mem(e->bwei, grown(bw, e->bwei)),
                 y = mem(e->bdst, grown(by, e->bdst));
    try {
      // The reorders on the calling thread alone: each is one pass over memory, and a parallel
      // region apiece woke the sleeping team three more times per convolution (YOLOv8n at two
      // threads: 22 -> 26 ms with them parallel).
      dnnl_rt::set_threads(1);
      std::unordered_map<int, memory> in{{DNNL_ARG_FROM, mem(e->src, a)}, {DNNL_ARG_TO, x}};
      dnnl_rt::execute(e->to_bsrc, e->to_bsrc_scratch, in);
      auto reorder_weights = [&](void* into) {
        std::unordered_map<int, memory> win{{DNNL_ARG_FROM, mem(e->wei, b)}, {DNNL_ARG_TO, mem(e->bwei, into)}};
        dnnl_rt::execute(e->to_bwei, e->to_bwei_scratch, win);
      };
      memory wuse = w;
      std::shared_ptr<const void> kept;  // NOTE [Derived forms]: a read-only weight's blocked copy
      if (b_storage && !b_storage->writable() && pass == ConvPass::kForward) {
        const Key k = key_of(pass, g, bf16, threads);
        std::string key(reinterpret_cast<const char*>(k.data()), sizeof(Key));
        const int64_t at = static_cast<const char*>(b) - static_cast<const char*>(b_storage->data());
        key.append(reinterpret_cast<const char*>(&at), sizeof at);
        kept = b_storage->derived(key, [&] {
          auto v = std::make_shared<std::vector<float>>((e->bwei.get_size() + sizeof(float) - 1) / sizeof(float));
          reorder_weights(v->data());
          return std::shared_ptr<const void>(v);
        });
        wuse = mem(e->bwei, const_cast<float*>(static_cast<const std::vector<float>*>(kept.get())->data()));
      } else {
        reorder_weights(w.get_data_handle());
      }
      dnnl_rt::set_threads(threads);
      std::unordered_map<int, memory> conv{{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, wuse}, {DNNL_ARG_DST, y}};
      dnnl_rt::execute(e->prim, e->scratch, conv);
      dnnl_rt::set_threads(1);
      std::unordered_map<int, memory> out_args{{DNNL_ARG_FROM, y}, {DNNL_ARG_TO, mem(e->dst, out)}};
      dnnl_rt::execute(e->from_bdst, e->from_bdst_scratch, out_args);
      dnnl_rt::set_threads(threads);
    } catch (const dnnl::error&) {
      dnnl_rt::set_threads(threads);
      return false;  // the caller's direct kernel overwrites the whole output
    }
    return true;
  }
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
