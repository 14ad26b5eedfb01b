// Small helpers of the harness: UTC timestamps and SHA-256 of artifacts.
#include <openssl/evp.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>

#include "spore/error.h"
#include "spore/probe/env.h"

namespace spore::probe {

namespace {
std::string format_utc(const char* fmt, bool millis) {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, fmt, &tm);
  std::string s = buf;
  if (millis) {
    int ms = (int)(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
    char m[8];
    std::snprintf(m, sizeof m, ".%03dZ", ms);
    s += m;
  }
  return s;
}

std::string hex(const unsigned char* d, unsigned n) {
  static const char* k = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < n; ++i) {
    s += k[d[i] >> 4];
    s += k[d[i] & 15];
  }
  return s;
}

struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
}  // namespace

std::string utc_now_iso8601() { return format_utc("%Y-%m-%dT%H:%M:%S", true); }
std::string utc_stamp_for_file() { return format_utc("%Y%m%dT%H%M%SZ", false); }

std::string sha256_bytes(const void* data, size_t n) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  if (!EVP_Digest(data, n, md, &len, EVP_sha256(), nullptr))
    throw Error(ErrorCode::kInternal, "sha256: OpenSSL EVP_Digest failed");
  return hex(md, len);
}

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIO, "sha256: cannot open '" + path + "'");
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  if (!ctx || !EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr))
    throw Error(ErrorCode::kInternal, "sha256: OpenSSL initialisation failed");
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf, (size_t)in.gcount());
  }
  if (in.bad()) throw Error(ErrorCode::kIO, "sha256: read error on '" + path + "'");
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  return hex(md, len);
}

}  // namespace spore::probe
