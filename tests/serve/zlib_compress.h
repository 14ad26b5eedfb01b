// Test helper: bytes compressed by zlib itself (an independent writer for the server's inflater).
// window_bits as deflateInit2 takes them: 31 gzip, 15 zlib-wrapped deflate, -15 raw deflate.
#pragma once
#include <zlib.h>

#include <string>

namespace spore::test {

inline std::string zlib_compress(const std::string& in, int window_bits, int level = 6) {
  z_stream z{};
  deflateInit2(&z, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, in.size()) + 32, '\0');
  z.next_in = (Bytef*)in.data();
  z.avail_in = (uInt)in.size();
  z.next_out = (Bytef*)out.data();
  z.avail_out = (uInt)out.size();
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace spore::test
