// dynamic_quant_matmul on the CPU (NOTE [Dynamic int8 products]): x's range, its uint8 copy, then
// oneDNN's u8 x s8 -> s32 product with x's zero point and the per-column scales applied by the
// primitive (one float product per output, after the exact integer sum). Where oneDNN refuses the
// problem, the same integer sums are taken here in int32.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "cpu_kernels.h"
#include "dnnl_runtime.h"
#include "pool_region.h"
#include "spore/int8.h"
#include "spore/op_registry.h"
#include "thread_pool.h"

namespace spore::cpu {

namespace {

using dnnl::memory;

struct Entry {
  dnnl::matmul prim;
  memory::desc a, b, c, scales, zero_point, scratch;
};

// The cached primitive for [m, k] x [k, n] on `threads` threads, or nullptr when oneDNN refuses
// it (refusals are cached too). Scales and x's zero point are run-time arguments, so one
// primitive serves every call of that shape.
std::shared_ptr<const Entry> primitive(int64_t m, int64_t k, int64_t n, int threads) {
  static std::mutex mu;
  static std::map<std::array<int64_t, 4>, std::shared_ptr<const Entry>> cache;
  const std::array<int64_t, 4> key{m, k, n, threads};
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= 512) cache.clear();  // a bound: shapes rarely vary that much
  std::shared_ptr<Entry> e;
  try {
    e = std::make_shared<Entry>();
    e->a = memory::desc({m, k}, memory::data_type::u8, memory::format_tag::ab);
    e->b = memory::desc({k, n}, memory::data_type::s8, memory::format_tag::ab);
    e->c = memory::desc({m, n}, memory::data_type::f32, memory::format_tag::ab);
    e->scales = memory::desc({n}, memory::data_type::f32, memory::format_tag::a);
    e->zero_point = memory::desc({1}, memory::data_type::s32, memory::format_tag::a);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_output_scales(1 << 1, {DNNL_RUNTIME_F32_VAL});  // one per output column
    attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(e->a, e->b, e->c), attr, dnnl_rt::engine());
    e->scratch = pd.scratchpad_desc();
    e->prim = dnnl::matmul(pd);
  } catch (const dnnl::error&) {
    e.reset();
  }
  return cache[key] = std::move(e);
}

// The same sums in int32 (|255 * 127| * k stays in range for any k below 2^16; longer rows are
// summed in int64).
void reference_product(const uint8_t* xq, int32_t zp, const int8_t* w, const float* scales, int64_t m, int64_t k,
                       int64_t n, float* y) {
  parallel_for(m, 1, [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> acc((size_t)n);
    for (int64_t i = r0; i < r1; ++i) {
      std::fill(acc.begin(), acc.end(), 0);
      for (int64_t p = 0; p < k; ++p) {
        const int64_t xv = (int64_t)xq[i * k + p] - zp;
        if (xv == 0) continue;
        const int8_t* wr = w + p * n;
        for (int64_t j = 0; j < n; ++j) acc[(size_t)j] += xv * wr[j];
      }
      for (int64_t j = 0; j < n; ++j) y[i * n + j] = scales[j] * (float)acc[(size_t)j];
    }
  });
}

void dynamic_quant_matmul_kernel(const KernelCall& c) {
  const Tensor x = c.inputs[0].contiguous(), w = c.inputs[1].contiguous(), ws = c.inputs[2].contiguous();
  const int64_t m = x.shape()[0], k = x.shape()[1], n = w.shape()[1];
  float* y = static_cast<float*>(c.outputs[0].data_ptr());
  if (m == 0 || n == 0) return;
  const float* xp = x.data<float>();
  // x's range, over chunks of rows.
  const int64_t total = m * k;
  const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(total, 1 << 16));
  const int64_t chunks = total == 0 ? 0 : (total + chunk - 1) / chunk;
  std::vector<float> lo((size_t)std::max<int64_t>(chunks, 1), 0.0f), hi((size_t)std::max<int64_t>(chunks, 1), 0.0f);
  parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t ci = c0; ci < c1; ++ci) {
      float a = 0, b = 0;  // the range always holds 0 (DynamicQuantizeLinear)
      bool finite = true;
      for (int64_t i = ci * chunk, e = std::min(total, (ci + 1) * chunk); i < e; ++i) {
        a = std::min(a, xp[i]);
        b = std::max(b, xp[i]);
        finite &= std::isfinite(xp[i]);
      }
      lo[(size_t)ci] = finite ? a : NAN;
      hi[(size_t)ci] = b;
    }
  });
  float a = 0, b = 0;
  for (int64_t ci = 0; ci < chunks; ++ci) {
    if (std::isnan(lo[(size_t)ci])) a = NAN;
    if (!std::isnan(a)) a = std::min(a, lo[(size_t)ci]);
    b = std::max(b, hi[(size_t)ci]);
  }
  const DynamicQuantParams p = dynamic_quant_params(a, b);  // kValue for a NaN or an infinity
  std::vector<uint8_t> xq((size_t)total);
  parallel_for(total, 1 << 14, [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) xq[(size_t)i] = dynamic_quantize(xp[i], p);
  });
  // x_scale * w_scale[j], rounded to float32 once (the op's one float rounding before the product).
  const float* wsp = ws.data<float>();
  std::vector<float> scales((size_t)n);
  for (int64_t j = 0; j < n; ++j) scales[(size_t)j] = p.scale * wsp[ws.numel() == 1 ? 0 : j];
  const int8_t* wp = w.data<int8_t>();
  int32_t zp = p.zero_point;
  const int threads = onednn_threads();  // 1 inside a pool chunk (NOTE [Threads that sleep])
  dnnl_rt::set_threads(threads);
  if (const auto e = primitive(m, k, n, threads)) {
    std::unordered_map<int, memory> args;
    args.emplace(DNNL_ARG_SRC, dnnl_rt::memory(e->a, xq.data()));
    args.emplace(DNNL_ARG_WEIGHTS, dnnl_rt::memory(e->b, wp));
    args.emplace(DNNL_ARG_DST, dnnl_rt::memory(e->c, y));
    args.emplace(DNNL_ARG_ATTR_OUTPUT_SCALES, dnnl_rt::memory(e->scales, scales.data()));
    args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, dnnl_rt::memory(e->zero_point, &zp));
    dnnl_rt::execute(e->prim, e->scratch, args);
    return;
  }
  reference_product(xq.data(), zp, wp, scales.data(), m, k, n, y);
}

}  // namespace

void register_int8_kernels() {
  register_kernel(OpId::k_dynamic_quant_matmul, kCpuBackend, DType::kFloat32, &dynamic_quant_matmul_kernel);
}

}  // namespace spore::cpu
