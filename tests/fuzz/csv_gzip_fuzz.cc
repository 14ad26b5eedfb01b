// libFuzzer target: gzip CSV through CsvSource's streaming inflater (src/data/gzip.cc).
// Byte 0 picks the options; with its top bit clear the rest is CSV text that the target
// compresses (so mutations reach the CSV parser behind the inflater), with it set the rest is
// written raw after the gzip magic (so mutations reach zlib's error paths and member handling).
#include <zlib.h>

#include <vector>

#include "csv_fuzz.h"

namespace {
std::vector<uint8_t> gzip_of(const uint8_t* text, size_t n, int members) {
  std::vector<uint8_t> out;
  // Split into `members` gzip members, as `cat a.gz b.gz` makes.
  for (int m = 0; m < members; ++m) {
    const size_t from = n * m / members, to = n * (m + 1) / members;
    z_stream zs{};
    spore::fuzz::require(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK,
                         "deflateInit2");
    std::vector<uint8_t> buf(deflateBound(&zs, (uLong)(to - from)) + 32);
    zs.next_in = const_cast<Bytef*>(text + from);
    zs.avail_in = (uInt)(to - from);
    zs.next_out = buf.data();
    zs.avail_out = (uInt)buf.size();
    spore::fuzz::require(deflate(&zs, Z_FINISH) == Z_STREAM_END, "deflate");
    out.insert(out.end(), buf.begin(), buf.begin() + (ptrdiff_t)zs.total_out);
    deflateEnd(&zs);
  }
  return out;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  std::vector<uint8_t> file;
  if (flags & 0x80) {
    file = {0x1f, 0x8b};
    file.insert(file.end(), data + 1, data + size);
  } else {
    file = gzip_of(data + 1, size - 1, (flags & 0x40) ? 2 : 1);
  }
  spore::fuzz::read_csv(spore::fuzz::scratch_file(file.data(), file.size(), ".csv.gz"), flags & 0x3f);
  return 0;
}
