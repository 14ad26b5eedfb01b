// libFuzzer target: IDX (MNIST) files through load_idx and IdxSource (src/data/idx.cc). The
// input is split in two at its first byte's value, so labels files are fuzzed alongside images.
#include <algorithm>

#include "fuzz_util.h"
#include "spore/data.h"
#include "spore/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  const std::string images = fuzz::scratch_file(data, size, ".idx3-ubyte");
  fuzz::load_array(data::load_idx, images, size);
  // A second reading: images and labels from the two halves of the input.
  const size_t cut = size ? std::min<size_t>(data[0], size - 1) + 1 : 0;
  const std::string first = fuzz::scratch_file(data + (size ? 1 : 0), cut ? cut - 1 : 0, ".a.idx");
  const std::string second = fuzz::scratch_file(data + cut, size - cut, ".b.idx");
  for (const auto& [img, lab] : {std::pair{images, std::string()}, std::pair{first, second}}) {
    try {
      data::TupleIterator it = data::IdxSource(img, lab).create_tuple_iterator();
      for (int64_t i = 0; i < fuzz::kMaxRows && it.next(); ++i) {
      }
    } catch (const Error&) {
    }
  }
  return 0;
}
