// Small analyses every pass shares (NOTE [Graph passes]): which values a node writes in place,
// where, and how many bytes a value takes.
#pragma once
#include <cstdint>
#include <vector>

#include "graph/passes/passes.h"

namespace spore::graph {

// The positions (node indices, ascending) of the nodes that write each value in place, indexed
// by ValueId (OpDef::writes_mask, NOTE [Declared effects]). A value with writers is mutable: its
// contents depend on where in the graph it is read, so passes never merge, fold, forward or move
// reads of it across a writer.
std::vector<std::vector<int>> writers_of_values(const Graph& g);

// True when some node writes `v` at a position in (after, before): a read of `v` moved from just
// after `after` to `before` would see a different tensor.
bool written_between(const std::vector<std::vector<int>>& writers, ValueId v, int after,
                     int before);

inline int64_t value_bytes(const Graph& g, ValueId v) {
  const TensorMeta& m = g.value(v).meta;
  return m.shape.numel() * (int64_t)dtype_size(m.dtype);
}

// Fills in nodes_before/after and nodes_removed from the node counts.
inline PassStats start_stats(const char* pass, const Graph& g) {
  PassStats s;
  s.pass = pass;
  s.nodes_before = (int)g.num_nodes();
  return s;
}
inline PassStats& finish_stats(PassStats& s, const Graph& g) {
  s.nodes_after = (int)g.num_nodes();
  s.nodes_removed = s.nodes_before - s.nodes_after;
  return s;
}

}  // namespace spore::graph

namespace spore::graph {

// Readers of each value (node indices, ascending), and whether the graph returns it: the
// inference rewrites (conv fusion, GELU) absorb a node only when it is its input's one reader.
struct Readers {
  std::vector<std::vector<int>> of;
  std::vector<bool> returned;
  explicit Readers(const Graph& g);
  // The single node reading v, or -1 (none, several, or v is a graph output).
  int only(ValueId v) const { return !returned[v] && of[v].size() == 1 ? of[v][0] : -1; }
};

// A constant value that no node writes (safe to read at compile time).
inline bool is_constant(const Graph& g, ValueId v, const std::vector<std::vector<int>>& writers) {
  return g.value(v).kind == ValueKind::kConstant && writers[v].empty();
}

// The value of a one-element constant, as double (a Clip bound, GELU's 0.5).
bool scalar_constant(const Graph& g, ValueId v, const std::vector<std::vector<int>>& writers, double& x);

}  // namespace spore::graph
