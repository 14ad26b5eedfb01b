// A minimal GGUF writer for tests: builds files byte by byte (valid ones, and broken ones by
// editing the bytes), so the reader is tested against the format as written, not against itself.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace spore::testing {

class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3) : version_(version) {}

  void add_string(const std::string& key, const std::string& v) {
    begin_kv(key, 8);
    str(kv_, v);
  }
  void add_u32(const std::string& key, uint32_t v) { begin_kv(key, 4), pod(kv_, v); }
  void add_i32(const std::string& key, int32_t v) { begin_kv(key, 5), pod(kv_, v); }
  void add_f32(const std::string& key, float v) { begin_kv(key, 6), pod(kv_, v); }
  void add_bool(const std::string& key, bool v) { begin_kv(key, 7), pod(kv_, (uint8_t)v); }
  void add_u64(const std::string& key, uint64_t v) { begin_kv(key, 10), pod(kv_, v); }
  void add_strings(const std::string& key, const std::vector<std::string>& v) {
    begin_kv(key, 9);
    pod(kv_, (uint32_t)8);
    pod(kv_, (uint64_t)v.size());
    for (const auto& s : v) str(kv_, s);
  }
  void add_f32s(const std::string& key, const std::vector<float>& v) {
    begin_kv(key, 9);
    pod(kv_, (uint32_t)6);
    pod(kv_, (uint64_t)v.size());
    for (float x : v) pod(kv_, x);
  }
  void add_i32s(const std::string& key, const std::vector<int32_t>& v) {
    begin_kv(key, 9);
    pod(kv_, (uint32_t)5);
    pod(kv_, (uint64_t)v.size());
    for (int32_t x : v) pod(kv_, x);
  }
  // A tensor of ggml type `type` with dims ne[0..], its bytes placed at the next aligned offset.
  void add_tensor(const std::string& name, uint32_t type, const std::vector<uint64_t>& dims,
                  const std::vector<uint8_t>& bytes) {
    while (data_.size() % alignment_) data_.push_back(0);
    str(ti_, name);
    pod(ti_, (uint32_t)dims.size());
    for (uint64_t d : dims) pod(ti_, d);
    pod(ti_, type);
    pod(ti_, (uint64_t)data_.size());
    data_.insert(data_.end(), bytes.begin(), bytes.end());
    ++n_tensors_;
  }
  void set_alignment(uint32_t a) {
    alignment_ = a;
    add_u32("general.alignment", a);
  }

  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> out = {'G', 'G', 'U', 'F'};
    pod(out, version_);
    pod(out, n_tensors_);
    pod(out, n_kv_);
    out.insert(out.end(), kv_.begin(), kv_.end());
    out.insert(out.end(), ti_.begin(), ti_.end());
    while (out.size() % alignment_) out.push_back(0);
    out.insert(out.end(), data_.begin(), data_.end());
    return out;
  }

 private:
  template <class T>
  static void pod(std::vector<uint8_t>& out, T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.insert(out.end(), b, b + sizeof(T));
  }
  static void str(std::vector<uint8_t>& out, const std::string& s) {
    pod(out, (uint64_t)s.size());
    out.insert(out.end(), s.begin(), s.end());
  }
  void begin_kv(const std::string& key, uint32_t type) {
    str(kv_, key);
    pod(kv_, type);
    ++n_kv_;
  }
  uint32_t version_;
  uint64_t n_tensors_ = 0, n_kv_ = 0;
  uint32_t alignment_ = 32;
  std::vector<uint8_t> kv_, ti_, data_;
};

}  // namespace spore::testing
