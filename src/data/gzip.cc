// Chunked reads that see through gzip (NOTE [Compressed inputs]).
//
// NOTE [Compressed inputs]
// Data sets ship compressed: scikit-learn's digits.csv.gz, MNIST's *-ubyte.gz. A text reader
// (CSV) accepts either form: a file that starts with the gzip magic bytes (1f 8b) is inflated
// with zlib, whatever its name; anything else is read as it is. A corrupt or truncated stream is
// a kFormat error naming the file and zlib's reason. The text is never held whole: TextStream
// hands it out a chunk at a time (inflating as it goes), so memory is two fixed buffers whatever
// the file's size, and a small file that inflates to gigabytes costs time, not memory.
#include <zlib.h>

#include <string>
#include <vector>

#include "data/file_io.h"

namespace spore::data::detail {

namespace {
constexpr size_t kPackedChunk = size_t{1} << 16;  // compressed bytes read per refill
}  // namespace

struct TextStream::Inflater {
  z_stream zs{};
  std::vector<unsigned char> packed = std::vector<unsigned char>(kPackedChunk);
  bool member_ended = false;  // the last inflate() finished a gzip member
  ~Inflater() { inflateEnd(&zs); }
};

TextStream::TextStream(const std::string& path) : file_(path) {
  unsigned char magic[2] = {0, 0};
  const uint64_t n = file_.read_some(magic, 2);
  file_.rewind();
  if (n == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    inflater_ = std::make_unique<Inflater>();
    // 15 + 16: a gzip wrapper (not zlib's), the largest window.
    if (inflateInit2(&inflater_->zs, 15 + 16) != Z_OK) {
      inflater_.reset();
      throw Error(ErrorCode::kInternal, "'" + path + "': zlib could not start inflating");
    }
  }
}

TextStream::~TextStream() = default;

size_t TextStream::read(char* dst, size_t n) {
  if (n == 0) return 0;
  if (!inflater_) return (size_t)file_.read_some(dst, n);
  z_stream& zs = inflater_->zs;
  zs.next_out = reinterpret_cast<Bytef*>(dst);
  zs.avail_out = (uInt)std::min<size_t>(n, 1u << 30);
  const uInt room = zs.avail_out;
  while (zs.avail_out == room) {  // until some output, or the end
    if (zs.avail_in == 0) {
      const uint64_t got = file_.read_some(inflater_->packed.data(), inflater_->packed.size());
      if (got == 0) {
        if (inflater_->member_ended) return 0;  // the end, after a complete member
        format_error(file_.path(), "the gzip stream is truncated (it ends before its last block)");
      }
      zs.next_in = inflater_->packed.data();
      zs.avail_in = (uInt)got;
    }
    if (inflater_->member_ended) {
      // Concatenated gzip members (as `cat a.gz b.gz` makes) are one stream to gzip(1).
      inflateReset(&zs);
      inflater_->member_ended = false;
    }
    const int rc = inflate(&zs, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      inflater_->member_ended = true;
      continue;
    }
    if (rc == Z_OK || rc == Z_BUF_ERROR) continue;  // Z_BUF_ERROR: needs more input, read above
    format_error(file_.path(),
                 "the gzip stream is corrupt: " + std::string(zs.msg ? zs.msg : "zlib error " + std::to_string(rc)));
  }
  return room - zs.avail_out;
}

}  // namespace spore::data::detail
