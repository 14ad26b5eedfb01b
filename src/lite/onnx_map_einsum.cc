// ONNX's Einsum written with registry ops (NOTE [ONNX attention and losses]): the equation is
// parsed (explicit or implicit output, one ellipsis per term, right-aligned and broadcast across
// terms), each operand's repeated labels become its diagonal (a product with a constant identity
// summed over the second axis), labels no one else needs are summed away, and the operands are
// contracted left to right, each pair as one batched matmul [batch, left, shared] x [batch,
// shared, right]. Integer operands are contracted in float64 (exact below 2^53).
#include <algorithm>
#include <cctype>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

constexpr int kEllipsisBase = 128;  // labels: ASCII letters, then ellipsis dimension k as base + k

struct Operand {
  uint32_t v;
  std::vector<int> labels;  // one per axis
};

struct Einsum {
  NodeCtx& c;
  Mapper& m;
  std::map<int, int64_t> extent;  // the broadcast extent of each label

  int64_t dim(const Operand& o, int label) const {
    return c.m.shape(o.v)[(int)(std::find(o.labels.begin(), o.labels.end(), label) - o.labels.begin())];
  }
  uint32_t permute(uint32_t v, const std::vector<int64_t>& perm) {
    bool same = true;
    for (size_t i = 0; i < perm.size(); ++i) same = same && perm[i] == (int64_t)i;
    return same ? v : m.emit(c, OpId::k_permute, {v}, Attrs::of(perm));
  }
  // o with its axes in the order of `labels` (each of o's labels present once).
  uint32_t ordered(const Operand& o, const std::vector<int>& labels) {
    std::vector<int64_t> perm;
    for (int l : labels) perm.push_back(std::find(o.labels.begin(), o.labels.end(), l) - o.labels.begin());
    return permute(o.v, perm);
  }
  // o summed over the labels `drop`.
  void sum_out(Operand& o, const std::set<int>& drop) {
    std::vector<int64_t> axes;
    std::vector<int> kept;
    for (size_t a = 0; a < o.labels.size(); ++a) (drop.count(o.labels[a]) ? axes.push_back((int64_t)a) : kept.push_back(o.labels[a]));
    if (axes.empty()) return;
    o.v = m.emit(c, OpId::k_sum, {o.v}, Attrs::of(axes, false));
    o.labels = kept;
  }
  // o's extent-1 axes broadcast to the labels' extents.
  void broadcast(Operand& o) {
    const Shape s = m.shape(o.v);
    std::vector<int64_t> want(s.begin(), s.end());
    bool grow = false;
    for (size_t a = 0; a < o.labels.size(); ++a)
      if (want[a] != extent[o.labels[a]]) want[a] = extent[o.labels[a]], grow = true;
    if (grow) o.v = m.emit(c, OpId::k_expand, {o.v}, Attrs::of(want));
  }
  // Repeated labels of one operand: its diagonal.
  void diagonal(Operand& o) {
    for (size_t p = 0; p < o.labels.size(); ++p)
      for (size_t q = p + 1; q < o.labels.size(); ++q) {
        if (o.labels[p] != o.labels[q]) continue;
        const Shape s = m.shape(o.v);
        if (s[(int)p] != s[(int)q]) c.bad("a label repeated in one term names axes of different extents");
        const int64_t n = s[(int)p];
        if (n * n > kMaxKnownElements * 256) c.unsupported("an Einsum diagonal over " + std::to_string(n) + " cells");
        std::vector<double> eye((size_t)(n * n), 0.0);
        for (int64_t i = 0; i < n; ++i) eye[(size_t)(i * n + i)] = 1;
        std::vector<int64_t> shape(o.labels.size(), 1);
        shape[p] = n, shape[q] = n;
        const uint32_t mask = m.cast_to(c, m.constant_of(eye, Shape(shape)), m.dtype(o.v));
        o.v = m.emit(c, OpId::k_sum, {m.emit(c, OpId::k_mul, {o.v, mask})}, Attrs::of(std::vector<int64_t>{(int64_t)q}, false));
        o.labels.erase(o.labels.begin() + (long)q);
        --q;
      }
  }
  int64_t product(const std::vector<int>& labels) {
    int64_t p = 1;
    for (int l : labels) p *= extent[l];
    return p;
  }
  std::vector<int64_t> extents(const std::vector<int>& labels) {
    std::vector<int64_t> e;
    for (int l : labels) e.push_back(extent[l]);
    return e;
  }
  // a x b over their shared labels; those in `keep` stay as batch axes.
  Operand contract(Operand a, Operand b, const std::set<int>& keep) {
    broadcast(a);
    broadcast(b);
    std::vector<int> batch, shared, left, right;
    for (int l : a.labels) {
      const bool in_b = std::count(b.labels.begin(), b.labels.end(), l) > 0;
      (in_b ? (keep.count(l) ? batch : shared) : left).push_back(l);
    }
    for (int l : b.labels)
      if (!std::count(a.labels.begin(), a.labels.end(), l)) right.push_back(l);
    std::vector<int> la = batch, lb = batch;
    la.insert(la.end(), left.begin(), left.end());
    la.insert(la.end(), shared.begin(), shared.end());
    lb.insert(lb.end(), shared.begin(), shared.end());
    lb.insert(lb.end(), right.begin(), right.end());
    const uint32_t av = m.reshape(c, ordered(a, la), {product(batch), product(left), product(shared)});
    const uint32_t bv = m.reshape(c, ordered(b, lb), {product(batch), product(shared), product(right)});
    Operand out{m.emit(c, OpId::k_matmul, {av, bv}), batch};
    out.labels.insert(out.labels.end(), left.begin(), left.end());
    out.labels.insert(out.labels.end(), right.begin(), right.end());
    out.v = m.reshape(c, out.v, extents(out.labels));
    return out;
  }
};

// One term's labels, its ellipsis (if any) standing for `rank` minus its letters axes.
std::vector<int> parse_term(NodeCtx& c, const std::string& term, int rank, int& ellipsis_rank) {
  std::vector<int> letters;
  int at = -1;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term.compare(i, 3, "...") == 0) {
      if (at >= 0) c.bad("a term of the equation has two ellipses");
      at = (int)letters.size();
      i += 2;
    } else if (std::isalpha((unsigned char)term[i])) {
      letters.push_back((unsigned char)term[i]);
    } else {
      c.bad(std::string("the equation holds '") + term[i] + "', not a letter, ',', '->' or '...'");
    }
  }
  if (rank < 0) {  // the output: every ellipsis dimension
    if (at >= 0)
      for (int k = 0; k < ellipsis_rank; ++k) letters.insert(letters.begin() + at + k, kEllipsisBase + k);
    return letters;
  }
  const int e = rank - (int)letters.size();
  if (e < 0 || (e > 0 && at < 0)) c.bad("the term '" + term + "' does not match its operand's rank " + std::to_string(rank));
  ellipsis_rank = std::max(ellipsis_rank, e);
  return letters;
}

std::vector<uint32_t> einsum(NodeCtx& c) {
  std::string eq;
  for (char ch : c.s("equation", "")) if (ch != ' ') eq.push_back(ch);
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t from = 0;;) {
    const size_t comma = lhs.find(',', from);
    terms.push_back(lhs.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  if (terms.size() != c.in.size()) c.bad("the equation has " + std::to_string(terms.size()) + " terms for " + std::to_string(c.in.size()) + " inputs");
  Einsum e{c, c.m, {}};
  DType t = c.m.dtype(c.at(0));
  int ellipsis_rank = 0;
  std::vector<Operand> ops;
  std::vector<std::vector<int>> letters;
  for (size_t k = 0; k < terms.size(); ++k) {
    if (c.m.dtype(c.at(k)) != t) c.bad("Einsum's inputs must share one type");
    letters.push_back(parse_term(c, terms[k], c.m.shape(c.at(k)).ndim(), ellipsis_rank));
  }
  const DType compute = is_floating(t) ? t : DType::kFloat64;
  std::map<int, int> count;
  for (size_t k = 0; k < terms.size(); ++k) {
    // Expand the ellipsis: this operand's last e of the equation's ellipsis dimensions.
    const int rank = c.m.shape(c.at(k)).ndim(), e_here = rank - (int)letters[k].size();
    std::vector<int> labels;
    const size_t at = terms[k].find("...");
    const size_t before = at == std::string::npos ? letters[k].size() : (size_t)std::count_if(terms[k].begin(), terms[k].begin() + (long)at, ::isalpha);
    labels.assign(letters[k].begin(), letters[k].begin() + (long)before);
    for (int d = 0; d < e_here; ++d) labels.push_back(kEllipsisBase + ellipsis_rank - e_here + d);
    labels.insert(labels.end(), letters[k].begin() + (long)before, letters[k].end());
    Operand o{c.m.cast_to(c, c.at(k), compute), labels};
    const Shape s = c.m.shape(o.v);
    for (size_t a = 0; a < labels.size(); ++a) {
      int64_t& x = e.extent[labels[a]];
      if (x > 1 && s[(int)a] > 1 && x != s[(int)a]) c.bad("the label axes disagree in extent (" + std::to_string(x) + " and " + std::to_string(s[(int)a]) + ")");
      x = std::max(x, s[(int)a]);
    }
    e.diagonal(o);
    for (int l : std::set<int>(o.labels.begin(), o.labels.end())) ++count[l];
    ops.push_back(o);
  }
  std::vector<int> out;
  if (arrow != std::string::npos) {
    out = parse_term(c, eq.substr(arrow + 2), -1, ellipsis_rank);
    for (int l : out)
      if (!e.extent.count(l)) c.bad("the output names a label no input has");
    if (std::set<int>(out.begin(), out.end()).size() != out.size()) c.bad("the output names a label twice");
  } else {  // implicit: the ellipsis, then the letters used once, in ASCII order
    for (int k = 0; k < ellipsis_rank; ++k) out.push_back(kEllipsisBase + k);
    for (const auto& [l, n] : count)
      if (l < kEllipsisBase && n == 1) out.push_back(l);
  }
  const std::set<int> wanted(out.begin(), out.end());
  // Left to right: before each contraction, labels that only this operand has and the output
  // does not want are summed away.
  auto needed_after = [&](size_t k) {
    std::set<int> keep = wanted;
    for (size_t j = k + 1; j < ops.size(); ++j) keep.insert(ops[j].labels.begin(), ops[j].labels.end());
    return keep;
  };
  Operand acc = ops[0];
  for (size_t k = 0; k < ops.size(); ++k) {
    std::set<int> keep = needed_after(k);
    if (k > 0) {
      std::set<int> drop;  // summed before the product: in one operand only, needed by no one
      for (int l : ops[k].labels)
        if (!keep.count(l) && !std::count(acc.labels.begin(), acc.labels.end(), l)) drop.insert(l);
      e.sum_out(ops[k], drop);
      drop.clear();
      for (int l : acc.labels)
        if (!keep.count(l) && !std::count(ops[k].labels.begin(), ops[k].labels.end(), l)) drop.insert(l);
      e.sum_out(acc, drop);
      acc = e.contract(acc, ops[k], keep);
    } else {
      std::set<int> drop;
      for (int l : acc.labels)
        if (!keep.count(l)) drop.insert(l);
      e.sum_out(acc, drop);
    }
  }
  e.broadcast(acc);
  uint32_t y = e.ordered(acc, out);
  if (out.empty()) y = c.m.reshape(c, y, {});
  else if (y == c.at(0)) y = c.m.emit(c, OpId::k_copy, {y});
  return {c.m.cast_to(c, y, t)};
}

}  // namespace

void add_einsum_ops(HandlerTable& t) { t["Einsum"] = einsum; }

}  // namespace spore::onnx::detail
