// repeat and project: stages that only re-run or re-select what is above them.
#include "data/node.h"
#include "data/stages.h"

namespace spore::data::detail {
namespace {

class RepeatNode final : public Node {
 public:
  RepeatNode(NodePtr child, int64_t count)
      : Node("repeat", child, child->columns()), count_(count) {}

  int64_t size() const override {
    int64_t n = child()->size();
    if (count_ < 0 || n < 0) return count_ == 0 ? 0 : -1;
    if (n != 0 && count_ > INT64_MAX / n) return -1;
    return n * count_;
  }

  std::unique_ptr<RowStream> open(uint64_t epoch_key) const override {
    return std::make_unique<Stream>(*this, epoch_key);
  }

 private:
  class Stream final : public RowStream {
   public:
    Stream(const RepeatNode& n, uint64_t key) : n_(n), key_(key) {}
    std::optional<Row> next() override {
      for (;;) {
        if (n_.count_ >= 0 && pass_ >= n_.count_) return std::nullopt;
        if (!child_) {
          // Pass 0 keeps the outer key, so x.repeat(k) starts exactly like x.
          child_ = n_.child()->open(pass_ == 0 ? key_ : mix64(key_ ^ mix64((uint64_t)pass_)));
          rows_in_pass_ = 0;
        }
        std::optional<Row> row = child_->next();
        if (row) {
          ++rows_in_pass_;
          return row;
        }
        child_.reset();
        ++pass_;
        // An empty pass means every later pass is empty too: an endless repeat must not spin.
        if (rows_in_pass_ == 0 && n_.count_ < 0) return std::nullopt;
      }
    }

   private:
    const RepeatNode& n_;
    uint64_t key_;
    int64_t pass_ = 0;
    int64_t rows_in_pass_ = 0;
    std::unique_ptr<RowStream> child_;
  };

  int64_t count_;
};

class ProjectNode final : public Node {
 public:
  ProjectNode(NodePtr child, std::vector<std::string> columns, std::vector<int> index)
      : Node("project", std::move(child), std::move(columns)), index_(std::move(index)) {}

  int64_t size() const override { return child()->size(); }

  std::unique_ptr<RowStream> open(uint64_t epoch_key) const override {
    return std::make_unique<Stream>(*this, child()->open(epoch_key));
  }

 private:
  class Stream final : public RowStream {
   public:
    Stream(const ProjectNode& n, std::unique_ptr<RowStream> child)
        : n_(n), child_(std::move(child)) {}
    std::optional<Row> next() override {
      std::optional<Row> row = child_->next();
      if (!row) return std::nullopt;
      Row out;
      for (int i : n_.index_) out.push_back((*row)[i]);
      return out;
    }

   private:
    const ProjectNode& n_;
    std::unique_ptr<RowStream> child_;
  };

  std::vector<int> index_;
};

}  // namespace

NodePtr make_repeat_node(NodePtr child, int64_t count) {
  return std::make_shared<RepeatNode>(std::move(child), count);
}

NodePtr make_project_node(NodePtr child, std::vector<std::string> columns) {
  const std::string label = stage_label(child.get(), "project");
  if (columns.empty()) throw Error(ErrorCode::kValue, label + ": no columns to keep");
  check_unique_names(columns, label);
  std::vector<int> index;
  for (const auto& name : columns) {
    int i = child->column_index(name);
    if (i < 0)
      throw Error(ErrorCode::kValue,
                  label + ": column '" + name + "' is not one of " + join_names(child->columns()));
    index.push_back(i);
  }
  return std::make_shared<ProjectNode>(std::move(child), std::move(columns), std::move(index));
}

}  // namespace spore::data::detail
