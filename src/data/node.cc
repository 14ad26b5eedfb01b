#include "data/node.h"

#include <exception>
#include <set>

#include "data/tensor_bytes.h"

namespace spore::data::detail {

Node::Node(std::string kind, std::shared_ptr<const Node> child, std::vector<std::string> columns)
    : kind_(std::move(kind)), child_(std::move(child)), columns_(std::move(columns)) {
  stage_ = child_ ? child_->stage() + 1 : 1;
  chain_ = child_ ? child_->chain() + " -> " + kind_ : kind_;
}

std::string Node::label() const {
  return "data pipeline stage " + std::to_string(stage_) + " '" + kind_ + "' (" + chain_ + ")";
}

std::string stage_label(const Node* child, const std::string& kind) {
  int stage = child ? child->stage() + 1 : 1;
  std::string chain = child ? child->chain() + " -> " + kind : kind;
  return "data pipeline stage " + std::to_string(stage) + " '" + kind + "' (" + chain + ")";
}

int Node::column_index(const std::string& name) const {
  for (size_t i = 0; i < columns_.size(); ++i)
    if (columns_[i] == name) return (int)i;
  return -1;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string s = "[";
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s + "]";
}

void check_unique_names(const std::vector<std::string>& names, const std::string& what) {
  std::set<std::string> seen;
  for (const auto& n : names) {
    if (n.empty())
      throw Error(ErrorCode::kValue, what + ": a column name is empty in " + join_names(names));
    if (!seen.insert(n).second)
      throw Error(ErrorCode::kValue, what + ": column '" + n + "' appears twice in " +
                                         join_names(names) + "; give every column its own name");
  }
}

ColumnChecker::ColumnChecker(const Node& node, std::vector<std::string> columns,
                             std::vector<ColumnSpec> specs, std::string producer)
    : node_(node),
      columns_(std::move(columns)),
      specs_(std::move(specs)),
      producer_(std::move(producer)),
      first_(columns_.size()),
      first_row_(columns_.size(), 0) {}

namespace {

std::string shape_spec_str(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + (dims[i] < 0 ? std::string("any") : std::to_string(dims[i]));
  return s + "]";
}

bool shape_matches(const Shape& got, const std::vector<int64_t>& want) {
  if (got.ndim() != (int)want.size()) return false;
  for (int i = 0; i < got.ndim(); ++i)
    if (want[i] >= 0 && got[i] != want[i]) return false;
  return true;
}

}  // namespace

void ColumnChecker::check(Row& values, int64_t row) {
  const std::string where = node_.label() + ", row " + std::to_string(row);
  if (values.size() != columns_.size())
    throw Error(ErrorCode::kValue, where + ": " + producer_ + " returned " +
                                       std::to_string(values.size()) + " value(s) for " +
                                       std::to_string(columns_.size()) + " column(s) " +
                                       join_names(columns_) + "; return one Tensor per column");
  for (size_t c = 0; c < columns_.size(); ++c) {
    Tensor& v = values[c];
    const std::string at = where + ", column '" + columns_[c] + "': ";
    if (!v.defined())
      throw Error(ErrorCode::kDType,
                  at + producer_ +
                      " returned an undefined Tensor, a value with no dtype or shape (the data "
                      "type is unknown); return a Tensor made with Tensor::from_vector, "
                      "Tensor::scalar or Tensor::empty, and wrap a single number as a 0-d or [1] "
                      "tensor");
    if (v.device() != Device::cpu()) v = to_host(v);
    if (c < specs_.size()) {
      const ColumnSpec& spec = specs_[c];
      if (spec.dtype && *spec.dtype != v.dtype())
        throw Error(ErrorCode::kDType,
                    at + producer_ + " returned dtype " + dtype_name(v.dtype()) + " (shape " +
                        v.shape().str() + ") but the column is declared " +
                        dtype_name(*spec.dtype) + "; cast the value inside the function");
      if (spec.shape && !shape_matches(v.shape(), *spec.shape))
        throw Error(ErrorCode::kShape, at + producer_ + " returned shape " + v.shape().str() +
                                           " (" + dtype_name(v.dtype()) +
                                           ") but the column is declared " +
                                           shape_spec_str(*spec.shape));
    }
    if (!first_[c]) {
      first_[c] = Seen{v.dtype(), v.shape()};
      first_row_[c] = row;
      continue;
    }
    const Seen& f = *first_[c];
    if (f.dtype != v.dtype())
      throw Error(ErrorCode::kDType,
                  at + producer_ + " returned dtype " + dtype_name(v.dtype()) + " (shape " +
                      v.shape().str() + ") but row " + std::to_string(first_row_[c]) + " gave " +
                      dtype_name(f.dtype) + "; a column keeps one dtype, so cast the values");
    if (f.shape.ndim() != v.ndim())
      throw Error(ErrorCode::kShape, at + producer_ + " returned shape " + v.shape().str() +
                                         " (rank " + std::to_string(v.ndim()) + ") but row " +
                                         std::to_string(first_row_[c]) + " gave " + f.shape.str() +
                                         " (rank " + std::to_string(f.shape.ndim()) +
                                         "); a column keeps one rank");
  }
}

void rethrow_with_context(std::exception_ptr error, const std::string& context) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    throw Error(e.code(), context + ": " + e.what());
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kValue, context + ": " + e.what());
  } catch (...) {
    throw Error(ErrorCode::kValue, context + ": an exception that is not a std::exception");
  }
}

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace spore::data::detail
