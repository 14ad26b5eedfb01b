// GeneratorDataset: rows made by user functions, checked as they come (NOTE [Pipeline errors]).
#include <exception>

#include "data/node.h"
#include "data/stages.h"

namespace spore::data {

namespace detail {
namespace {

class RandomAccessNode final : public Node {
 public:
  RandomAccessNode(RandomAccessFn fn, int64_t rows, std::vector<std::string> columns)
      : Node("generator", nullptr, std::move(columns)), fn_(std::move(fn)), rows_(rows) {}

  int64_t size() const override { return rows_; }

  std::unique_ptr<RowStream> open(uint64_t) const override {
    return std::make_unique<Stream>(*this);
  }

 private:
  class Stream final : public RowStream {
   public:
    explicit Stream(const RandomAccessNode& n)
        : n_(n), checker_(n, n.columns(), {}, "the generator") {}
    std::optional<Row> next() override {
      if (i_ >= n_.rows_) return std::nullopt;
      const int64_t i = i_++;
      Row row;
      try {
        row = n_.fn_(i);
      } catch (...) {
        rethrow_with_context(std::current_exception(),
                             n_.label() + ", row " + std::to_string(i) + ": the generator threw");
      }
      checker_.check(row, i);
      return row;
    }

   private:
    const RandomAccessNode& n_;
    ColumnChecker checker_;
    int64_t i_ = 0;
  };

  RandomAccessFn fn_;
  int64_t rows_;
};

class SequentialNode final : public Node {
 public:
  SequentialNode(GeneratorFactory factory, std::vector<std::string> columns)
      : Node("generator", nullptr, std::move(columns)), factory_(std::move(factory)) {}

  int64_t size() const override { return -1; }

  std::unique_ptr<RowStream> open(uint64_t) const override {
    GeneratorFn gen;
    try {
      gen = factory_();
    } catch (...) {
      rethrow_with_context(std::current_exception(), label() + ": the generator factory threw");
    }
    if (!gen)
      throw Error(ErrorCode::kValue,
                  label() + ": the generator factory returned an empty function");
    return std::make_unique<Stream>(*this, std::move(gen));
  }

 private:
  class Stream final : public RowStream {
   public:
    Stream(const SequentialNode& n, GeneratorFn gen)
        : n_(n), gen_(std::move(gen)), checker_(n, n.columns(), {}, "the generator") {}
    std::optional<Row> next() override {
      if (ended_) return std::nullopt;
      std::optional<Row> row;
      try {
        row = gen_();
      } catch (...) {
        rethrow_with_context(std::current_exception(),
                             n_.label() + ", row " + std::to_string(i_) + ": the generator threw");
      }
      if (!row) {
        ended_ = true;  // a generator is not asked again once it has ended
        return std::nullopt;
      }
      checker_.check(*row, i_++);
      return row;
    }

   private:
    const SequentialNode& n_;
    GeneratorFn gen_;
    ColumnChecker checker_;
    int64_t i_ = 0;
    bool ended_ = false;
  };

  GeneratorFactory factory_;
};

void check_source_columns(const std::vector<std::string>& columns) {
  if (columns.empty())
    throw Error(ErrorCode::kValue,
                "GeneratorDataset: column_names is empty; name every value a row holds");
  check_unique_names(columns, "GeneratorDataset");
}

}  // namespace
}  // namespace detail

Dataset GeneratorDataset(RandomAccessFn fn, int64_t num_rows,
                         std::vector<std::string> column_names) {
  if (!fn) throw Error(ErrorCode::kValue, "GeneratorDataset: the row function is empty");
  if (num_rows < 0)
    throw Error(ErrorCode::kValue,
                "GeneratorDataset: num_rows is " + std::to_string(num_rows) + "; it must be >= 0");
  detail::check_source_columns(column_names);
  return Dataset(
      std::make_shared<detail::RandomAccessNode>(std::move(fn), num_rows, std::move(column_names)));
}

Dataset GeneratorDataset(GeneratorFactory factory, std::vector<std::string> column_names) {
  if (!factory) throw Error(ErrorCode::kValue, "GeneratorDataset: the generator factory is empty");
  detail::check_source_columns(column_names);
  return Dataset(
      std::make_shared<detail::SequentialNode>(std::move(factory), std::move(column_names)));
}

}  // namespace spore::data
