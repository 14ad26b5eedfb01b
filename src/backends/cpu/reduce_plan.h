// The CPU reduction engine: a plan that turns (strided input, reduced axes) into loops, and one
// driver that runs a reduction policy over it.
//
// NOTE [Deterministic reductions]
// The order in which each output element's inputs are combined depends only on the input's
// shape and strides, never on the thread count: the reduced elements are cut into fixed units
// (pieces of at most kReduceChunk elements of the innermost reduced axis), units are grouped into
// fixed blocks, a block is combined unit by unit, and the blocks of one output are combined in
// order. Threads only decide who computes which output or which block, so
// set_num_threads(1) and set_num_threads(n) give bitwise identical results.
//
// Two loop shapes keep the memory access contiguous where the layout allows it:
//   * row mode: the innermost reduced axis (the one with the smallest stride) is a row that is
//     read with stride 1 when possible (sum over the last axis);
//   * column mode: when the innermost output axis has stride 1 in the input and the reduced axes
//     do not, a block of up to kReduceCols neighbouring outputs is updated from each contiguous
//     input segment (sum over axis 0 of a row-major matrix). Wide segments matter: narrow ones
//     touch every page of the input once per task and stall on the TLB. The reduced range is cut
//     into fixed blocks of kReduceColBlock indices, combined in order.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "thread_pool.h"
#include "spore/tensor.h"

namespace spore::cpu {

inline constexpr int64_t kReduceChunk = 4096;  // elements of one unit (fits L1 with room)
inline constexpr int64_t kReduceCols = 1024;   // outputs per column-mode task (a 4 KiB page of float)
inline constexpr int64_t kReduceColBlock = 256;  // reduced indices per column-mode block

// A short list of (extent, stride) pairs.
struct Dims {
  int n = 0;
  int64_t shape[kMaxDims + 1] = {};
  int64_t stride[kMaxDims + 1] = {};
  void push(int64_t s, int64_t st) {
    shape[n] = s;
    stride[n] = st;
    ++n;
  }
  int64_t numel() const {
    int64_t k = 1;
    for (int i = 0; i < n; ++i) k *= shape[i];
    return k;
  }
  // Merges neighbours that walk memory as one axis (the outer stride spans the inner axis).
  void coalesce() {
    int m = 0;
    for (int i = 0; i < n; ++i) {
      if (m > 0 && stride[m - 1] == stride[i] * shape[i]) {
        shape[m - 1] *= shape[i];
        stride[m - 1] = stride[i];
      } else {
        shape[m] = shape[i];
        stride[m] = stride[i];
        ++m;
      }
    }
    n = m;
  }
};

// Walks the index space of a Dims in row-major order, tracking the memory offset.
struct Odometer {
  const Dims* d;
  int64_t idx[kMaxDims + 1] = {};
  int64_t off = 0;
  explicit Odometer(const Dims& dims, int64_t linear = 0) : d(&dims) { seek(linear); }
  void seek(int64_t linear) {
    off = 0;
    for (int i = d->n - 1; i >= 0; --i) {
      int64_t s = d->shape[i];
      idx[i] = s ? linear % s : 0;
      linear = s ? linear / s : 0;
      off += idx[i] * d->stride[i];
    }
  }
  void next() {
    for (int i = d->n - 1; i >= 0; --i) {
      off += d->stride[i];
      if (++idx[i] < d->shape[i]) return;
      off -= d->stride[i] * d->shape[i];
      idx[i] = 0;
    }
  }
};

struct ReducePlan {
  Dims outer;              // kept axes in output order, coalesced; outputs are row-major over them
  Dims rest;               // reduced axes except the row, outermost first
  int64_t row_len = 1;     // extent of the innermost reduced axis
  int64_t row_stride = 0;  // its stride
  int64_t count = 1;       // reduced elements per output
  int64_t num_out = 1;
  bool column = false;  // column mode (see the note)
};

// `reduced[i]` marks the reduced axes of x. With logical_order the reduced axes keep their
// order (argmax needs row-major indices); otherwise they are sorted by stride for locality.
inline ReducePlan make_reduce_plan(const Tensor& x, const std::vector<bool>& reduced,
                                   bool logical_order) {
  ReducePlan p;
  const Shape& s = x.shape();
  const Shape& st = x.strides();
  Dims red;
  for (int i = 0; i < s.ndim(); ++i) {
    if (reduced[i]) {
      p.count *= s[i];
      if (s[i] != 1) red.push(s[i], st[i]);
    } else {
      p.num_out *= s[i];
      if (s[i] != 1) p.outer.push(s[i], st[i]);
    }
  }
  p.outer.coalesce();
  if (!logical_order) {
    // Stable insertion sort by |stride|, largest first (at most 8 axes).
    for (int i = 1; i < red.n; ++i)
      for (int j = i; j > 0 && std::llabs(red.stride[j - 1]) < std::llabs(red.stride[j]); --j) {
        std::swap(red.shape[j - 1], red.shape[j]);
        std::swap(red.stride[j - 1], red.stride[j]);
      }
  }
  red.coalesce();
  if (red.n > 0) {
    p.row_len = red.shape[red.n - 1];
    p.row_stride = red.stride[red.n - 1];
    for (int i = 0; i + 1 < red.n; ++i) p.rest.push(red.shape[i], red.stride[i]);
  }
  p.column = p.outer.n > 0 && p.outer.stride[p.outer.n - 1] == 1 &&
             p.outer.shape[p.outer.n - 1] >= 8 && p.row_stride != 1 && p.count > 1;
  return p;
}

// Runs a reduction policy P over a plan. P provides:
//   using In;  using State;
//   State init() const;
//   void row(State&, const In* p, int64_t n, int64_t stride, int64_t o, int64_t idx0) const;
//   void col(State* s, const In* p, int64_t w, int64_t o0, int64_t idx) const;
//   void merge(State& a, const State& later) const;
//   void finish(const State&, int64_t o) const;   // writes output o
// idx0 / idx: the row-major index, within the reduced axes, of the first element handed over
// (meaningful when the plan was made with logical_order).
template <class P>
void run_reduce(const ReducePlan& pl, const typename P::In* base, const P& pol) {
  using State = typename P::State;
  if (pl.num_out == 0) return;
  if (pl.count == 0) {
    parallel_for(pl.num_out, 1 << 16, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) pol.finish(pol.init(), o);
    });
    return;
  }

  if (pl.column) {
    const int64_t width = pl.outer.shape[pl.outer.n - 1];
    Dims rows = pl.outer;  // the outer axes without the contiguous last one
    --rows.n;
    Dims red = pl.rest;
    red.push(pl.row_len, pl.row_stride);
    const int64_t nrows = pl.num_out / width;
    const int64_t cols = std::min(width, kReduceCols);
    const int64_t ncols = (width + cols - 1) / cols;
    const int64_t tasks = nrows * ncols;
    const int64_t nblk = (pl.count + kReduceColBlock - 1) / kReduceColBlock;
    // Combines reduced indices [k0, k1) of task t into st[0..w); returns w.
    auto run_task = [&](int64_t t, int64_t k0, int64_t k1, State* st) {
      const int64_t r = t / ncols, c0 = (t % ncols) * cols;
      const int64_t w = std::min(cols, width - c0);
      const typename P::In* p0 = base + Odometer(rows, r).off + c0;
      for (int64_t j = 0; j < w; ++j) st[j] = pol.init();
      Odometer it(red, k0);
      for (int64_t k = k0; k < k1; ++k, it.next()) pol.col(st, p0 + it.off, w, r * width + c0, k);
      return w;
    };
    if (nblk == 1) {
      const int64_t grain = std::max<int64_t>(1, (1 << 16) / (pl.count * cols));
      parallel_for(tasks, grain, [&](int64_t b, int64_t e) {
        std::vector<State> st((size_t)cols);
        for (int64_t t = b; t < e; ++t) {
          const int64_t w = run_task(t, 0, pl.count, st.data());
          const int64_t o0 = (t / ncols) * width + (t % ncols) * cols;
          for (int64_t j = 0; j < w; ++j) pol.finish(st[(size_t)j], o0 + j);
        }
      });
      return;
    }
    // Long reductions: blocks of kReduceColBlock reduced indices run in parallel; each column
    // then merges its blocks in order.
    std::vector<State> part((size_t)(tasks * nblk * cols));
    parallel_for(tasks * nblk, 1, [&](int64_t b, int64_t e) {
      for (int64_t tb = b; tb < e; ++tb) {
        const int64_t k0 = (tb % nblk) * kReduceColBlock;
        run_task(tb / nblk, k0, std::min(pl.count, k0 + kReduceColBlock), &part[(size_t)(tb * cols)]);
      }
    });
    parallel_for(tasks, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t c0 = (t % ncols) * cols, w = std::min(cols, width - c0);
        const int64_t o0 = (t / ncols) * width + c0;
        for (int64_t j = 0; j < w; ++j) {
          State acc = part[(size_t)(t * nblk * cols + j)];
          for (int64_t blk = 1; blk < nblk; ++blk) pol.merge(acc, part[(size_t)((t * nblk + blk) * cols + j)]);
          pol.finish(acc, o0 + j);
        }
      }
    });
    return;
  }

  // Row mode: units are pieces of a row; blocks group units up to about kReduceChunk elements.
  const int64_t unit_len = std::min(pl.row_len, kReduceChunk);
  const int64_t units_per_row = (pl.row_len + unit_len - 1) / unit_len;
  const int64_t units = pl.rest.numel() * units_per_row;
  const int64_t units_per_block = std::max<int64_t>(1, kReduceChunk / unit_len);
  const int64_t blocks = (units + units_per_block - 1) / units_per_block;

  // Combines units [u0, u1) of output o whose first input element is at base + ooff.
  auto run_units = [&](int64_t ooff, int64_t o, int64_t u0, int64_t u1, State& acc) {
    Odometer it(pl.rest, u0 / units_per_row);
    int64_t c = u0 % units_per_row;
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t start = c * unit_len;
      const int64_t n = std::min(unit_len, pl.row_len - start);
      const int64_t ridx = u / units_per_row;
      State s = pol.init();
      pol.row(s, base + ooff + it.off + start * pl.row_stride, n, pl.row_stride, o,
              ridx * pl.row_len + start);
      pol.merge(acc, s);
      if (++c == units_per_row) {
        c = 0;
        it.next();
      }
    }
  };
  auto run_block = [&](int64_t ooff, int64_t o, int64_t blk) {
    State acc = pol.init();
    run_units(ooff, o, blk * units_per_block, std::min(units, (blk + 1) * units_per_block), acc);
    return acc;
  };

  if (blocks == 1 || pl.num_out >= 16) {
    const int64_t grain = std::max<int64_t>(1, (1 << 15) / pl.count);
    parallel_for(pl.num_out, grain, [&](int64_t b, int64_t e) {
      Odometer out_it(pl.outer, b);
      for (int64_t o = b; o < e; ++o, out_it.next()) {
        State acc = pol.init();
        for (int64_t blk = 0; blk < blocks; ++blk) pol.merge(acc, run_block(out_it.off, o, blk));
        pol.finish(acc, o);
      }
    });
    return;
  }
  // Few outputs, long reductions: blocks run in parallel, then each output merges its blocks
  // in order (the same combination as above).
  std::vector<State> partial((size_t)(pl.num_out * blocks));
  parallel_for(pl.num_out * blocks, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / blocks;
      partial[(size_t)t] = run_block(Odometer(pl.outer, o).off, o, t % blocks);
    }
  });
  for (int64_t o = 0; o < pl.num_out; ++o) {
    State acc = pol.init();
    for (int64_t blk = 0; blk < blocks; ++blk) pol.merge(acc, partial[(size_t)(o * blocks + blk)]);
    pol.finish(acc, o);
  }
}

}  // namespace spore::cpu
