// SHA-256 through OpenSSL's EVP interface (the one-shot SHA256() is deprecated in OpenSSL 3).
#include <openssl/evp.h>

#include <vector>

#include "io/posix_file.h"
#include "spore/error.h"
#include "spore/format.h"

namespace spore {

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
  ~Impl() { EVP_MD_CTX_free(ctx); }
};

namespace {
[[noreturn]] void evp_failed(const char* what) {
  throw Error(ErrorCode::kInternal, std::string("OpenSSL ") + what + " failed for SHA-256");
}
}  // namespace

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  if (!impl_->ctx) evp_failed("EVP_MD_CTX_new");
  if (EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr) != 1) evp_failed("EVP_DigestInit_ex");
}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(const void* data, size_t bytes) {
  if (!impl_) throw Error(ErrorCode::kValue, "use of a moved-from Sha256");
  if (bytes && EVP_DigestUpdate(impl_->ctx, data, bytes) != 1) evp_failed("EVP_DigestUpdate");
}

std::string Sha256::hex_digest() {
  if (!impl_) throw Error(ErrorCode::kValue, "use of a moved-from Sha256");
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(impl_->ctx, md, &len) != 1) evp_failed("EVP_DigestFinal_ex");
  if (EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr) != 1) evp_failed("EVP_DigestInit_ex");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(2 * len, '0');
  for (unsigned i = 0; i < len; ++i) {
    out[2 * i] = kHex[md[i] >> 4];
    out[2 * i + 1] = kHex[md[i] & 15];
  }
  return out;
}

std::string sha256_bytes(std::span<const uint8_t> bytes) {
  Sha256 h;
  h.update(bytes);
  return h.hex_digest();
}

std::string sha256_bytes(std::string_view bytes) {
  Sha256 h;
  h.update(bytes.data(), bytes.size());
  return h.hex_digest();
}

std::string sha256_file(const std::filesystem::path& path) {
  io::UniqueFd fd = io::open_for_read(path);
  Sha256 h;
  std::vector<uint8_t> buf(1 << 20);
  uint64_t offset = 0;
  for (;;) {
    size_t n = io::pread_full(fd.get(), buf.data(), buf.size(), offset, path);
    h.update(buf.data(), n);
    offset += n;
    if (n < buf.size()) break;
  }
  return h.hex_digest();
}

}  // namespace spore
