// libFuzzer target: .npy files through load_npy and NumpySource (src/data/npy.cc).
#include "fuzz_util.h"
#include "spore/data.h"
#include "spore/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  const std::string path = fuzz::scratch_file(data, size, ".npy");
  fuzz::load_array(data::load_npy, path, size);
  try {
    data::TupleIterator it = data::NumpySource(path).create_tuple_iterator();
    for (int64_t i = 0; i < fuzz::kMaxRows && it.next(); ++i) {
    }
  } catch (const Error&) {
  }
  return 0;
}
