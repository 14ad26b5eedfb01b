// Shared by the two CSV targets: the first input byte picks the reader's options, the rest is
// the file's text (plain, or inflated from gzip).
#pragma once
#include <algorithm>

#include "fuzz_util.h"
#include "spore/data.h"
#include "spore/error.h"

namespace spore::fuzz {

inline data::CsvOptions csv_options(uint8_t flags) {
  data::CsvOptions o;
  o.header = flags & 1;
  o.delimiter = (flags & 2) ? ';' : (flags & 4) ? '\t' : ',';
  if (flags & 8)  // declared columns: every dtype kind, and a multi-field column
    o.columns = {{"i", DType::kInt8, 0}, {"h", DType::kFloat16, 2}, {"b", DType::kBool, 0},
                 {"l", DType::kInt64, 0}};
  else if (flags & 16)
    o.columns = {{"u", DType::kUInt8, 0}, {"f", DType::kBFloat16, 0}, {"d", DType::kFloat64, 0}};
  return o;
}

// Reads the file at `path` as CSV; a bad file must be a spore::Error.
inline void read_csv(const std::string& path, uint8_t flags) {
  try {
    data::Dataset ds = data::CsvSource(path, csv_options(flags));
    const int64_t rows = ds.get_dataset_size();
    require(rows >= 0, "a CSV source of unknown size");
    data::TupleIterator it = ds.create_tuple_iterator();
    int64_t seen = 0;
    while (seen < kMaxRows && it.next()) ++seen;
    require(seen == std::min(rows, kMaxRows), "a CSV source yields another count than its size");
  } catch (const Error&) {
  }
}

}  // namespace spore::fuzz
