// Dataset (the value users hold) and the iterators over it.
#include <exception>

#include "data/node.h"
#include "data/stages.h"

namespace spore::data {

using detail::NodePtr;

Dataset::Dataset(std::shared_ptr<const detail::Node> node) : node_(std::move(node)) {
  if (!node_) throw Error(ErrorCode::kInternal, "Dataset: no pipeline node");
}

Dataset Dataset::map(MapFn fn, std::vector<std::string> input_columns,
                     std::vector<std::string> output_columns, int num_parallel_workers,
                     std::vector<ColumnSpec> output_specs) const {
  return Dataset(detail::make_map_node(node_, std::move(fn), std::move(input_columns),
                                       std::move(output_columns), num_parallel_workers,
                                       std::move(output_specs)));
}

Dataset Dataset::shuffle(int64_t buffer_size, uint64_t seed) const {
  return Dataset(detail::make_shuffle_node(node_, buffer_size, seed));
}

Dataset Dataset::batch(int64_t batch_size, bool drop_remainder) const {
  return Dataset(detail::make_batch_node(node_, batch_size, drop_remainder));
}

Dataset Dataset::repeat(int64_t count) const {
  return Dataset(detail::make_repeat_node(node_, count));
}

Dataset Dataset::project(std::vector<std::string> columns) const {
  return Dataset(detail::make_project_node(node_, std::move(columns)));
}

TupleIterator Dataset::create_tuple_iterator() const {
  return TupleIterator(node_);
}
DictIterator Dataset::create_dict_iterator() const {
  return DictIterator(TupleIterator(node_));
}
int64_t Dataset::get_dataset_size() const {
  return node_->size();
}
const std::vector<std::string>& Dataset::column_names() const {
  return node_->columns();
}
std::string Dataset::describe() const {
  return node_->chain();
}

TupleIterator::TupleIterator(std::shared_ptr<const detail::Node> root) : root_(std::move(root)) {}
TupleIterator::~TupleIterator() = default;
TupleIterator::TupleIterator(TupleIterator&&) noexcept = default;
TupleIterator& TupleIterator::operator=(TupleIterator&&) noexcept = default;

const std::vector<std::string>& TupleIterator::column_names() const {
  if (!root_) throw Error(ErrorCode::kValue, "column_names() on a moved-from dataset iterator");
  return root_->columns();
}

std::optional<Row> TupleIterator::next() {
  if (!failure_.empty())
    throw Error(ErrorCode::kValue,
                "this iterator stopped at an earlier error; create a new iterator "
                "to start again. The error was: " +
                    failure_);
  if (!root_ || done_) return std::nullopt;
  try {
    // Opening runs nothing yet, but it starts the map workers: do it on first use.
    if (!stream_) stream_ = root_->open(0);
    std::optional<Row> row = stream_->next();
    if (!row) {
      stream_.reset();  // stops the map workers as soon as the pass ends
      done_ = true;
    }
    return row;
  } catch (const std::exception& e) {
    failure_ = e.what();
    stream_.reset();
    throw;
  }
}

std::optional<NamedRow> DictIterator::next() {
  std::optional<Row> row = it_.next();
  if (!row) return std::nullopt;
  NamedRow out;
  const auto& names = it_.column_names();
  for (size_t i = 0; i < names.size(); ++i) out.emplace(names[i], std::move((*row)[i]));
  return out;
}

}  // namespace spore::data
