// Whole-file reads that see through gzip (NOTE [Compressed inputs]).
//
// NOTE [Compressed inputs]
// Data sets ship compressed: scikit-learn's digits.csv.gz, MNIST's *-ubyte.gz. A reader that takes
// a whole file at once (CSV) accepts either form: a file that starts with the gzip magic bytes
// (1f 8b) is inflated with zlib, whatever its name; anything else is read as it is. A corrupt or
// truncated stream is a kFormat error naming the file and zlib's reason. Inflated output is
// capped (kMaxInflated) so that a small hostile file cannot expand into all of memory.
#include <zlib.h>

#include <string>

#include "data/file_io.h"

namespace spore::data::detail {

namespace {

constexpr uint64_t kMaxInflated = uint64_t{8} << 30;  // 8 GiB

std::string inflate_gzip(const std::string& path, const std::string& packed) {
  z_stream zs{};
  // 15 + 16: a gzip wrapper (not zlib's), the largest window.
  if (inflateInit2(&zs, 15 + 16) != Z_OK)
    throw Error(ErrorCode::kInternal, "'" + path + "': zlib could not start inflating");
  std::string out;
  out.resize(std::max<size_t>(packed.size() * 4, 1 << 16));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
  zs.avail_in = (uInt)packed.size();
  size_t produced = 0;
  int rc = Z_OK;
  for (;;) {
    if (produced == out.size()) {
      if (out.size() >= kMaxInflated) {
        inflateEnd(&zs);
        format_error(path, "the gzip stream inflates to more than " +
                               std::to_string(kMaxInflated >> 30) + " GiB; refusing to read it");
      }
      out.resize(std::min<uint64_t>(out.size() * 2, kMaxInflated));
    }
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    zs.avail_out = (uInt)std::min<size_t>(out.size() - produced, 1u << 30);
    const uInt before = zs.avail_out;
    rc = inflate(&zs, Z_NO_FLUSH);
    produced += before - zs.avail_out;
    if (rc == Z_STREAM_END) {
      // Concatenated gzip members (as `cat a.gz b.gz` makes) are one stream to gzip(1).
      if (zs.avail_in == 0) break;
      inflateReset(&zs);
      continue;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
      inflateEnd(&zs);
      format_error(path, "the gzip stream is truncated (it ends before its last block)");
    }
    if (rc == Z_BUF_ERROR) continue;  // only needed more output room
    std::string why = zs.msg ? zs.msg : "error " + std::to_string(rc);
    inflateEnd(&zs);
    format_error(path, "the gzip stream is corrupt: " + why);
  }
  inflateEnd(&zs);
  out.resize(produced);
  return out;
}

}  // namespace

std::string read_whole_file(const std::string& path, const std::string& what) {
  InFile f(path);
  std::string bytes(f.size(), '\0');
  f.read(bytes.data(), f.size(), what);
  if (bytes.size() >= 2 && (unsigned char)bytes[0] == 0x1f && (unsigned char)bytes[1] == 0x8b)
    return inflate_gzip(path, bytes);
  return bytes;
}

}  // namespace spore::data::detail
