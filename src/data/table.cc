// A source over whole arrays already in memory (the file readers build on it): row i is the
// slice i of every column, handed out as a view, so reading a row copies nothing.
#include "data/node.h"
#include "data/stages.h"
#include "data/tensor_bytes.h"

namespace spore::data::detail {
namespace {

class TableNode final : public Node {
 public:
  TableNode(std::string kind, std::vector<std::string> names, std::vector<Tensor> columns)
      : Node(std::move(kind), nullptr, std::move(names)), data_(std::move(columns)) {}

  int64_t size() const override { return data_.empty() ? 0 : data_[0].shape()[0]; }

  std::unique_ptr<RowStream> open(uint64_t) const override {
    return std::make_unique<Stream>(*this);
  }

 private:
  class Stream final : public RowStream {
   public:
    explicit Stream(const TableNode& n) : n_(n) {}
    std::optional<Row> next() override {
      if (i_ >= n_.size()) return std::nullopt;
      Row row;
      for (const Tensor& t : n_.data_) row.push_back(row_view(t, i_));
      ++i_;
      return row;
    }

   private:
    const TableNode& n_;
    int64_t i_ = 0;
  };

  std::vector<Tensor> data_;
};

}  // namespace

NodePtr make_table_node(std::string kind, std::vector<std::string> names,
                        std::vector<Tensor> columns) {
  const std::string label = stage_label(nullptr, kind);
  if (names.size() != columns.size() || names.empty())
    throw Error(ErrorCode::kInternal, label + ": column names and arrays differ in number");
  check_unique_names(names, label);
  for (size_t i = 0; i < columns.size(); ++i) {
    columns[i] = to_host(columns[i]);
    const Tensor& t = columns[i];
    if (t.ndim() == 0)
      throw Error(ErrorCode::kShape, label + ", column '" + names[i] +
                                         "': the array is 0-d; a source needs at least one axis, "
                                         "whose extent is the number of rows");
    if (t.shape()[0] != columns[0].shape()[0])
      throw Error(ErrorCode::kShape,
                  label + ": column '" + names[i] + "' has " + std::to_string(t.shape()[0]) +
                      " rows (shape " + t.shape().str() + ") but column '" + names[0] + "' has " +
                      std::to_string(columns[0].shape()[0]) + " (shape " +
                      columns[0].shape().str() + "); every column needs the same number of rows");
  }
  return std::make_shared<TableNode>(std::move(kind), std::move(names), std::move(columns));
}

}  // namespace spore::data::detail
