// batch: stacks consecutive rows per column along a new leading axis, copying bytes (every
// value in a pipeline is a host tensor, so no kernels are needed).
#include <cstring>

#include "data/node.h"
#include "data/stages.h"
#include "data/tensor_bytes.h"

namespace spore::data::detail {
namespace {

class BatchNode final : public Node {
 public:
  BatchNode(NodePtr child, int64_t batch, bool drop)
      : Node("batch", child, child->columns()), batch_(batch), drop_(drop) {}

  int64_t size() const override {
    int64_t n = child()->size();
    if (n < 0) return -1;
    return drop_ ? n / batch_ : (n + batch_ - 1) / batch_;
  }

  std::unique_ptr<RowStream> open(uint64_t epoch_key) const override {
    return std::make_unique<Stream>(*this, child()->open(epoch_key));
  }

 private:
  class Stream final : public RowStream {
   public:
    Stream(const BatchNode& n, std::unique_ptr<RowStream> child)
        : n_(n), child_(std::move(child)) {}

    std::optional<Row> next() override {
      std::vector<Row> rows;
      while (!ended_ && (int64_t)rows.size() < n_.batch_) {
        std::optional<Row> row = child_->next();
        if (!row) {
          ended_ = true;
          break;
        }
        rows.push_back(std::move(*row));
      }
      if (rows.empty() || (n_.drop_ && (int64_t)rows.size() < n_.batch_)) return std::nullopt;
      const int64_t batch_index = batches_++;
      const int64_t first_row = rows_seen_;
      rows_seen_ += (int64_t)rows.size();
      Row out;
      for (size_t c = 0; c < n_.columns().size(); ++c)
        out.push_back(stack(rows, c, batch_index, first_row));
      return out;
    }

   private:
    Tensor stack(const std::vector<Row>& rows, size_t c, int64_t batch_index,
                 int64_t first_row) const {
      const std::string& column = n_.columns()[c];
      const Tensor& head = rows[0].at(c);
      for (size_t r = 1; r < rows.size(); ++r) {
        const Tensor& t = rows[r].at(c);
        if (t.dtype() != head.dtype() || t.shape() != head.shape())
          throw Error(t.shape() != head.shape() ? ErrorCode::kShape : ErrorCode::kDType,
                      n_.label() + ", column '" + column + "', batch " +
                          std::to_string(batch_index) + ": row " + std::to_string(r) +
                          " of the batch (row " + std::to_string(first_row + (int64_t)r) +
                          " of the input) has shape " + t.shape().str() + " " +
                          dtype_name(t.dtype()) + " but row 0 (row " + std::to_string(first_row) +
                          ") has " + head.shape().str() + " " + dtype_name(head.dtype()) +
                          "; every row of a batch needs the same shape and dtype per column "
                          "(pad or resize them in a map first)");
      }
      if (head.ndim() >= kMaxDims)
        throw Error(ErrorCode::kShape, n_.label() + ", column '" + column + "': rows of shape " +
                                           head.shape().str() + " already have " +
                                           std::to_string(kMaxDims) +
                                           " axes, the most a tensor has; "
                                           "a batch axis cannot be added");
      Tensor out = Tensor::empty(stacked_shape((int64_t)rows.size(), head.shape()), head.dtype(),
                                 Device::cpu());
      auto* dst = static_cast<unsigned char*>(out.data_ptr());
      const size_t row_bytes = head.nbytes();
      for (size_t r = 0; r < rows.size(); ++r) copy_elements(rows[r][c], dst + r * row_bytes);
      return out;
    }

    const BatchNode& n_;
    std::unique_ptr<RowStream> child_;
    bool ended_ = false;
    int64_t batches_ = 0;
    int64_t rows_seen_ = 0;
  };

  int64_t batch_;
  bool drop_;
};

}  // namespace

NodePtr make_batch_node(NodePtr child, int64_t batch_size, bool drop_remainder) {
  if (batch_size < 1)
    throw Error(ErrorCode::kValue, stage_label(child.get(), "batch") + ": batch_size is " +
                                       std::to_string(batch_size) + "; it must be >= 1");
  return std::make_shared<BatchNode>(std::move(child), batch_size, drop_remainder);
}

}  // namespace spore::data::detail
