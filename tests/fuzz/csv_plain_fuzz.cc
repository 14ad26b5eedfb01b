// libFuzzer target: plain CSV text through CsvSource (src/data/csv.cc). Byte 0 picks the options.
#include "csv_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  spore::fuzz::read_csv(spore::fuzz::scratch_file(data + 1, size - 1, ".csv"), data[0]);
  return 0;
}
