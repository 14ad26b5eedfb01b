// Pipeline internals: a Node describes one stage (immutable, shared by every Dataset built on
// it); open() starts one pass over it as a RowStream. Streams pull rows from their child's
// stream on the iterating thread (map workers aside), so sources need no locking.
#pragma once
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spore/data.h"

namespace spore::data::detail {

class RowStream {
 public:
  virtual ~RowStream() = default;
  virtual std::optional<Row> next() = 0;  // nullopt at the end of the pass
};

class Node {
 public:
  Node(std::string kind, std::shared_ptr<const Node> child, std::vector<std::string> columns);
  virtual ~Node() = default;

  // epoch_key: which pass this is (0 for the first); shuffles derive their order from it.
  virtual std::unique_ptr<RowStream> open(uint64_t epoch_key) const = 0;
  virtual int64_t size() const = 0;  // -1: unknown or endless

  const std::vector<std::string>& columns() const { return columns_; }
  const std::shared_ptr<const Node>& child() const { return child_; }
  const std::string& kind() const { return kind_; }
  int stage() const { return stage_; }
  const std::string& chain() const { return chain_; }
  // "data pipeline stage 2 'map' (generator -> map -> batch)": the prefix of every error.
  std::string label() const;
  // Index of a column of this node's output, or -1.
  int column_index(const std::string& name) const;

 private:
  std::string kind_;
  std::shared_ptr<const Node> child_;
  std::vector<std::string> columns_;
  int stage_ = 1;
  std::string chain_;
};

// The label a node of `kind` on top of `child` will have: for errors raised while building it.
std::string stage_label(const Node* child, const std::string& kind);
std::string join_names(const std::vector<std::string>& names);  // "[a, b]"
// Throws kValue when names repeat; `what` says whose names they are.
void check_unique_names(const std::vector<std::string>& names, const std::string& what);

// Checks the rows a stage produces, in row order, on the iterating thread (NOTE [Pipeline
// errors]): the number of values, defined tensors, declared specs, and that a column keeps the
// dtype and rank of its first row. Moves values to the CPU (the pipeline works on host memory).
class ColumnChecker {
 public:
  // producer: who made the values, for messages ("the map function", "the generator").
  ColumnChecker(const Node& node, std::vector<std::string> columns, std::vector<ColumnSpec> specs,
                std::string producer);
  void check(Row& values, int64_t row);

 private:
  const Node& node_;
  std::vector<std::string> columns_;
  std::vector<ColumnSpec> specs_;
  std::string producer_;
  struct Seen {
    DType dtype;
    Shape shape;
  };
  std::vector<std::optional<Seen>> first_;  // per column: the first row's dtype and shape
  std::vector<int64_t> first_row_;
};

// Rebuilds an error raised by user code (a generator or map function) with the stage, the row
// and the columns in front, keeping its code (kValue for exceptions that are not spore::Error).
[[noreturn]] void rethrow_with_context(std::exception_ptr error, const std::string& context);

// A 64-bit mixer (splitmix64's finaliser): seeds and epoch keys.
uint64_t mix64(uint64_t x);

}  // namespace spore::data::detail
