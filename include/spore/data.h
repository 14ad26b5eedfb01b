// spore::data: the dataset pipeline (MindSpore's mindspore.dataset, in C++).
//
// A Dataset is a value that describes a pipeline: a source (a generator, .npy files, a CSV file,
// MNIST-style IDX files) followed by stages (map, shuffle, batch, repeat). Nothing runs until an
// iterator is created; each iterator makes one pass over the pipeline from the start, so two
// iterators over the same Dataset yield the same rows, and a pipeline rebuilt with the same
// seeds yields the same batches.
//
// NOTE [Pipeline determinism]
// The rows a pipeline yields depend only on its sources, its functions and its seeds, never on
// the number of map workers or on thread timing: map workers run in parallel but their results
// are handed on in input order, shuffles draw from a generator of their own (seeded, the same
// on every platform), and a repeated shuffle derives each epoch's seed from its seed and the
// epoch number. Errors are deterministic too: an error raised for row k surfaces when row k
// would have been yielded, after rows 0..k-1.
//
// NOTE [Pipeline errors]
// Every error a pipeline raises names the stage ("stage 2 'map'", with the whole chain), the
// column, the row and what it got, e.g. a map that returns an undefined Tensor (the C++ form of
// the chapter's "data type is unknown") or a float64 where the column was declared float32.
// Within one pass a column keeps the dtype and rank of its first row; a later row that differs
// is an error at the stage that produced it, not a crash or a silent cast later on.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spore/tensor.h"

namespace spore::data {

// One value per column, in the dataset's column order (a tuple iterator's item).
using Row = std::vector<Tensor>;
// Column name -> value (a dict iterator's item).
using NamedRow = std::map<std::string, Tensor>;

// What a stage promises about one of its output columns; unset parts accept anything.
struct ColumnSpec {
  std::optional<DType> dtype;
  // Required shape of one row's value; -1 accepts any extent in that axis.
  std::optional<std::vector<int64_t>> shape;
};

// A random-access source: row `index` of `num_rows` (MindSpore's __getitem__ + __len__).
using RandomAccessFn = std::function<Row(int64_t index)>;
// A sequential source: the next row, or nullopt at the end.
using GeneratorFn = std::function<std::optional<Row>()>;
// Makes a fresh GeneratorFn for each pass (each iterator, each repeat).
using GeneratorFactory = std::function<GeneratorFn()>;
// A map function: the values of the input columns -> the values of the output columns.
// With num_parallel_workers > 1 it is called from several threads at once.
using MapFn = std::function<Row(const Row& inputs)>;

namespace detail {
class Node;
class RowStream;
}  // namespace detail

// One pass over a pipeline, yielding rows as tuples. Also a range: for (const Row& r : it).
// After an error the iterator stays failed: next() throws again instead of yielding more rows.
class TupleIterator {
 public:
  explicit TupleIterator(std::shared_ptr<const detail::Node> root);
  ~TupleIterator();
  TupleIterator(TupleIterator&&) noexcept;
  TupleIterator& operator=(TupleIterator&&) noexcept;

  std::optional<Row> next();
  const std::vector<std::string>& column_names() const;

  class RangeIt {
   public:
    RangeIt() = default;
    explicit RangeIt(TupleIterator* it) : it_(it) { ++*this; }
    const Row& operator*() const { return *row_; }
    RangeIt& operator++() {
      row_ = it_->next();
      return *this;
    }
    bool operator!=(const RangeIt&) const { return row_.has_value(); }

   private:
    TupleIterator* it_ = nullptr;
    std::optional<Row> row_;
  };
  RangeIt begin() { return RangeIt(this); }
  RangeIt end() { return RangeIt(); }

 private:
  std::shared_ptr<const detail::Node> root_;
  std::unique_ptr<detail::RowStream> stream_;
  std::string failure_;  // set once next() has thrown
  bool done_ = false;
};

// One pass over a pipeline, yielding rows keyed by column name.
class DictIterator {
 public:
  explicit DictIterator(TupleIterator it) : it_(std::move(it)) {}
  std::optional<NamedRow> next();
  const std::vector<std::string>& column_names() const { return it_.column_names(); }

 private:
  TupleIterator it_;
};

class Dataset {
 public:
  explicit Dataset(std::shared_ptr<const detail::Node> node);

  // Applies fn to the values of input_columns of every row; its results become output_columns
  // (default: the input column names), placed where the first input column was; the other
  // columns keep their order. num_parallel_workers threads run fn; rows keep their order.
  // output_specs (empty, or one per output column) declares the dtype/shape fn must return.
  Dataset map(MapFn fn, std::vector<std::string> input_columns,
              std::vector<std::string> output_columns = {}, int num_parallel_workers = 1,
              std::vector<ColumnSpec> output_specs = {}) const;
  // Yields rows in a random order drawn from a buffer of buffer_size rows (a buffer at least
  // as large as the dataset gives a uniform shuffle). The same seed gives the same order.
  Dataset shuffle(int64_t buffer_size, uint64_t seed) const;
  // Stacks batch_size consecutive rows per column into one tensor with a leading batch axis.
  // All rows of a batch need equal shapes and dtypes per column. The last, smaller batch is
  // yielded unless drop_remainder.
  Dataset batch(int64_t batch_size, bool drop_remainder = false) const;
  // Runs the pipeline above count times (count < 0: without end). Each repetition reshuffles
  // the shuffles above it (NOTE [Pipeline determinism]).
  Dataset repeat(int64_t count = -1) const;
  // Keeps only `columns`, in that order.
  Dataset project(std::vector<std::string> columns) const;

  TupleIterator create_tuple_iterator() const;
  DictIterator create_dict_iterator() const;

  // Rows (batches after batch) in one pass, or -1 when unknown (a sequential generator) or
  // endless (repeat without a count).
  int64_t get_dataset_size() const;
  const std::vector<std::string>& column_names() const;
  // The stages from the source on, e.g. "generator -> map -> batch".
  std::string describe() const;

 private:
  std::shared_ptr<const detail::Node> node_;
};

// ---- sources ----

// Rows 0..num_rows-1 from fn, with the given column names. fn runs on the iterating thread.
Dataset GeneratorDataset(RandomAccessFn fn, int64_t num_rows,
                         std::vector<std::string> column_names);
// Rows from a fresh generator per pass (size unknown until it ends).
Dataset GeneratorDataset(GeneratorFactory factory, std::vector<std::string> column_names);

// Row i holds slice i (along axis 0) of each array. Every file needs the same first extent.
Dataset NumpySource(const std::vector<std::pair<std::string, std::string>>& columns);  // name, path
Dataset NumpySource(const std::string& path, const std::string& column = "data");

struct CsvColumn {
  std::string name;
  DType dtype = DType::kFloat32;
  int64_t width = 0;  // 0: one field, a 0-d value; k > 0: k consecutive fields, a [k] value
};
struct CsvOptions {
  bool header = true;  // the first line names the fields
  char delimiter = ',';
  // The fields of a line, left to right. Empty: one float32 0-d column per field, named by the
  // header (or "column_0", "column_1", ... without one).
  std::vector<CsvColumn> columns;
};
// Reads and checks the whole file at once: a ragged line or a cell that is not a number of its
// column's dtype is a kFormat error naming the file, the line and the field. A gzip file (magic
// 1f 8b) is inflated as it is read; memory holds the parsed values, never the text (NOTE
// [Streaming CSV]), and a line longer than 64 MiB is a kFormat error.
Dataset CsvSource(const std::string& path, const CsvOptions& options = {});

// MNIST-style IDX files: column "image" (the file's element type, shape = the file's dims after
// the first, e.g. uint8 [28, 28]) and, when labels_path is not empty, column "label" (int32 0-d,
// read from a 1-d IDX file with one label per image).
Dataset IdxSource(const std::string& images_path, const std::string& labels_path = "");

// ---- file formats ----

// NumPy .npy, versions 1.0-3.0, C order, dtypes b1 i1 u1 i4 i8 f2 f4 f8 (either byte order).
Tensor load_npy(const std::string& path);
// Writes version 1.0 (2.0 when the header needs it), little-endian. bfloat16 has no .npy
// dtype: cast it first.
void save_npy(const std::string& path, const Tensor& tensor);
// Writes an integer tensor as .npy's "int16", "uint16" or "uint32" (little-endian): the types an
// ONNX model's values carried in a wider dtype have (NOTE [ONNX carried types]). kValue when an
// element does not fit the type or the type is another; kDType for a floating-point tensor.
void save_npy_narrowed(const std::string& path, const Tensor& tensor, const std::string& type);
// Whether save_npy_narrowed writes `type` ("int16", "uint16", "uint32"): the carried types .npy names.
bool npy_has_narrow_type(const std::string& type);
// IDX (big-endian dims): element types uint8 (0x08), int8 (0x09), int32 (0x0C), float32 (0x0D),
// float64 (0x0E).
Tensor load_idx(const std::string& path);
void save_idx(const std::string& path, const Tensor& tensor);

}  // namespace spore::data
