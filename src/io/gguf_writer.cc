// The GGUF writer (NOTE [GGUF writer]): header encoding, alignment and streamed tensor data.
#include "spore/gguf_writer.h"

#include <cstring>
#include <limits>

#include "spore/error.h"

namespace spore {

namespace {

constexpr uint32_t kVersion = 3;
constexpr size_t kMaxGgufDims = 4;  // GGML_MAX_DIMS

[[noreturn]] void bad_value(const std::string& key, const std::string& why) {
  throw Error(ErrorCode::kValue, "GGUF writer: metadata '" + key + "' " + why);
}

bool is_unsigned(GgufType t) {
  return t == GgufType::kUInt8 || t == GgufType::kUInt16 || t == GgufType::kUInt32 || t == GgufType::kUInt64;
}
bool is_signed(GgufType t) {
  return t == GgufType::kInt8 || t == GgufType::kInt16 || t == GgufType::kInt32 || t == GgufType::kInt64;
}
int int_bits(GgufType t) {
  switch (t) {
    case GgufType::kUInt8: case GgufType::kInt8: return 8;
    case GgufType::kUInt16: case GgufType::kInt16: return 16;
    case GgufType::kUInt32: case GgufType::kInt32: return 32;
    default: return 64;
  }
}

// Appends little-endian bytes (the format's byte order; this library runs on little-endian hosts).
class Bytes {
 public:
  template <class T>
  void pod(T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.insert(out.end(), b, b + sizeof(T));
  }
  void str(std::string_view s) {
    pod<uint64_t>(s.size());
    out.insert(out.end(), s.begin(), s.end());
  }
  std::vector<uint8_t> out;
};

// Encodes a value of type `type` (its type tag written by the caller), checking that it fits.
void encode(Bytes& b, const std::string& key, GgufType type, const GgufValue& v, int depth) {
  if (v.type != type)
    bad_value(key, std::string("holds a ") + gguf_type_name(v.type) + " where a " + gguf_type_name(type) +
                       " is declared (array elements must all have the array's element type)");
  if (is_unsigned(type)) {
    const uint64_t* u = std::get_if<uint64_t>(&v.value);
    if (!u) bad_value(key, std::string("is declared ") + gguf_type_name(type) + " but holds no unsigned integer");
    if (int_bits(type) < 64 && *u >> int_bits(type))
      bad_value(key, "is " + std::to_string(*u) + ", too large for " + gguf_type_name(type));
    switch (type) {
      case GgufType::kUInt8: b.pod<uint8_t>((uint8_t)*u); break;
      case GgufType::kUInt16: b.pod<uint16_t>((uint16_t)*u); break;
      case GgufType::kUInt32: b.pod<uint32_t>((uint32_t)*u); break;
      default: b.pod<uint64_t>(*u); break;
    }
    return;
  }
  if (is_signed(type)) {
    const int64_t* i = std::get_if<int64_t>(&v.value);
    if (!i) bad_value(key, std::string("is declared ") + gguf_type_name(type) + " but holds no signed integer");
    const int bits = int_bits(type);
    if (bits < 64 && (*i < -(int64_t(1) << (bits - 1)) || *i >= (int64_t(1) << (bits - 1))))
      bad_value(key, "is " + std::to_string(*i) + ", outside the range of " + gguf_type_name(type));
    switch (type) {
      case GgufType::kInt8: b.pod<int8_t>((int8_t)*i); break;
      case GgufType::kInt16: b.pod<int16_t>((int16_t)*i); break;
      case GgufType::kInt32: b.pod<int32_t>((int32_t)*i); break;
      default: b.pod<int64_t>(*i); break;
    }
    return;
  }
  switch (type) {
    case GgufType::kFloat32:
    case GgufType::kFloat64: {
      const double* d = std::get_if<double>(&v.value);
      if (!d) bad_value(key, std::string("is declared ") + gguf_type_name(type) + " but holds no number");
      if (type == GgufType::kFloat32) b.pod<float>((float)*d);
      else b.pod<double>(*d);
      return;
    }
    case GgufType::kBool: {
      const bool* x = std::get_if<bool>(&v.value);
      if (!x) bad_value(key, "is declared bool but holds no bool");
      b.pod<uint8_t>(*x ? 1 : 0);
      return;
    }
    case GgufType::kString: {
      const std::string* s = std::get_if<std::string>(&v.value);
      if (!s) bad_value(key, "is declared string but holds no string");
      b.str(*s);
      return;
    }
    case GgufType::kArray: {
      const auto* items = std::get_if<std::vector<GgufValue>>(&v.value);
      if (!items) bad_value(key, "is declared array but holds no elements list");
      if (depth >= 3) bad_value(key, "nests arrays too deeply");
      b.pod<uint32_t>((uint32_t)v.element_type);
      b.pod<uint64_t>(items->size());
      for (const GgufValue& e : *items) encode(b, key, v.element_type, e, depth + 1);
      return;
    }
    default: bad_value(key, "has an unknown type");
  }
}

uint64_t pad_to(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

// Collects bytes in memory (to_bytes).
class VectorSink final : public FileSink {
 public:
  void write(const void* data, size_t bytes) override {
    auto* p = static_cast<const uint8_t*>(data);
    out.insert(out.end(), p, p + bytes);
  }
  void flush() override {}
  uint64_t bytes_written() const override { return out.size(); }
  std::vector<uint8_t> out;
};

}  // namespace

GgufValue gguf_uint(GgufType type, uint64_t v) {
  if (!is_unsigned(type)) throw Error(ErrorCode::kValue, std::string("gguf_uint: ") + gguf_type_name(type) + " is not an unsigned type");
  GgufValue g;
  g.type = type;
  g.value = v;
  return g;
}
GgufValue gguf_int(GgufType type, int64_t v) {
  if (!is_signed(type)) throw Error(ErrorCode::kValue, std::string("gguf_int: ") + gguf_type_name(type) + " is not a signed type");
  GgufValue g;
  g.type = type;
  g.value = v;
  return g;
}
GgufValue gguf_float(GgufType type, double v) {
  if (type != GgufType::kFloat32 && type != GgufType::kFloat64)
    throw Error(ErrorCode::kValue, std::string("gguf_float: ") + gguf_type_name(type) + " is not a float type");
  GgufValue g;
  g.type = type;
  g.value = v;
  return g;
}
GgufValue gguf_bool(bool v) {
  GgufValue g;
  g.type = GgufType::kBool;
  g.value = v;
  return g;
}
GgufValue gguf_string(std::string v) {
  GgufValue g;
  g.type = GgufType::kString;
  g.value = std::move(v);
  return g;
}
GgufValue gguf_array(GgufType element_type, std::vector<GgufValue> items) {
  GgufValue g;
  g.type = GgufType::kArray;
  g.element_type = element_type;
  g.value = std::move(items);
  return g;
}
GgufValue gguf_strings(const std::vector<std::string>& items) {
  std::vector<GgufValue> v;
  v.reserve(items.size());
  for (const auto& s : items) v.push_back(gguf_string(s));
  return gguf_array(GgufType::kString, std::move(v));
}
GgufValue gguf_int32s(const std::vector<int32_t>& items) {
  std::vector<GgufValue> v;
  v.reserve(items.size());
  for (int32_t x : items) v.push_back(gguf_int(GgufType::kInt32, x));
  return gguf_array(GgufType::kInt32, std::move(v));
}
GgufValue gguf_float32s(const std::vector<float>& items) {
  std::vector<GgufValue> v;
  v.reserve(items.size());
  for (float x : items) v.push_back(gguf_float(GgufType::kFloat32, x));
  return gguf_array(GgufType::kFloat32, std::move(v));
}

namespace {
uint64_t checked_bytes(GgmlType type, const std::vector<uint64_t>& dims, const std::string& name) {
  const std::string what = name.empty() ? std::string("a tensor") : "tensor '" + name + "'";
  const QuantTraits& ti = quant_traits(type);
  uint64_t n = 1;
  for (uint64_t d : dims)
    if (__builtin_mul_overflow(n, d, &n) || n > (uint64_t)INT64_MAX)
      throw Error(ErrorCode::kValue, "GGUF writer: " + what + " has dimensions whose product overflows");
  if (!dims.empty() && dims[0] % ti.block_size != 0)
    throw Error(ErrorCode::kValue, "GGUF writer: " + what + " of type " + ti.name + " has a first dimension (" +
                                       std::to_string(dims[0]) + ") that is not a multiple of its block size " +
                                       std::to_string(ti.block_size));
  return n / ti.block_size * ti.block_bytes;
}
}  // namespace

uint64_t ggml_tensor_bytes(GgmlType type, const std::vector<uint64_t>& dims) { return checked_bytes(type, dims, ""); }

bool GgufWriter::contains(std::string_view key) const {
  for (const auto& [k, v] : kv_)
    if (k == key) return true;
  return false;
}

void GgufWriter::set(std::string key, GgufValue value) {
  if (key.empty()) throw Error(ErrorCode::kValue, "GGUF writer: a metadata key is empty");
  if (contains(key)) bad_value(key, "is already set; each key appears once in a GGUF file");
  Bytes probe;  // checks the value now, so the error names the caller's key at the call
  encode(probe, key, value.type, value, 0);
  if (key == "general.alignment") {
    const uint64_t* a = std::get_if<uint64_t>(&value.value);
    if (value.type != GgufType::kUInt32 || !a || *a == 0 || (*a & (*a - 1)) != 0)
      bad_value(key, "must be a uint32 power of two");
    if (!tensors_.empty()) bad_value(key, "must be set before the first tensor is added");
    alignment_ = *a;
  }
  kv_.emplace_back(std::move(key), std::move(value));
}

void GgufWriter::set_alignment(uint32_t alignment) { set_u32("general.alignment", alignment); }

void GgufWriter::add_tensor(std::string name, GgmlType type, std::vector<uint64_t> dims,
                            std::function<void(FileSink&)> producer) {
  if (name.empty()) throw Error(ErrorCode::kValue, "GGUF writer: a tensor name is empty");
  for (const Tensor& t : tensors_)
    if (t.name == name) throw Error(ErrorCode::kValue, "GGUF writer: tensor '" + name + "' is added twice");
  if (dims.size() > kMaxGgufDims)
    throw Error(ErrorCode::kValue, "GGUF writer: tensor '" + name + "' has " + std::to_string(dims.size()) +
                                       " dimensions; GGUF allows at most 4");
  Tensor t;
  t.nbytes = checked_bytes(type, dims, name);
  t.name = std::move(name);
  t.type = type;
  t.dims = std::move(dims);
  t.offset = data_size_;
  t.producer = std::move(producer);
  data_size_ += pad_to(t.nbytes, alignment_);
  tensors_.push_back(std::move(t));
}

void GgufWriter::add_tensor(std::string name, GgmlType type, std::vector<uint64_t> dims,
                            std::vector<uint8_t> bytes) {
  const uint64_t want = checked_bytes(type, dims, name);
  if (bytes.size() != want)
    throw Error(ErrorCode::kValue, "GGUF writer: tensor '" + name + "' of type " + quant_traits(type).name +
                                       " needs " + std::to_string(want) + " bytes, got " +
                                       std::to_string(bytes.size()));
  auto held = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  add_tensor(std::move(name), type, std::move(dims), [held](FileSink& s) { s.write(*held); });
}

void GgufWriter::write_to(FileSink& sink) const {
  Bytes h;
  h.out.reserve(1 << 16);
  for (char c : {'G', 'G', 'U', 'F'}) h.out.push_back((uint8_t)c);
  h.pod<uint32_t>(kVersion);
  h.pod<uint64_t>(tensors_.size());
  h.pod<uint64_t>(kv_.size());
  for (const auto& [key, value] : kv_) {
    h.str(key);
    h.pod<uint32_t>((uint32_t)value.type);
    encode(h, key, value.type, value, 0);
  }
  for (const Tensor& t : tensors_) {
    h.str(t.name);
    h.pod<uint32_t>((uint32_t)t.dims.size());
    for (uint64_t d : t.dims) h.pod<uint64_t>(d);
    h.pod<uint32_t>((uint32_t)t.type);
    h.pod<uint64_t>(t.offset);
  }
  h.out.resize(pad_to(h.out.size(), alignment_), 0);
  sink.write(h.out);
  const std::vector<uint8_t> zeros(alignment_, 0);
  for (const Tensor& t : tensors_) {
    const uint64_t before = sink.bytes_written();
    t.producer(sink);
    const uint64_t wrote = sink.bytes_written() - before;
    if (wrote != t.nbytes)
      throw Error(ErrorCode::kInternal, "GGUF writer: tensor '" + t.name + "' produced " + std::to_string(wrote) +
                                            " bytes; its type and shape need " + std::to_string(t.nbytes));
    sink.write(zeros.data(), pad_to(t.nbytes, alignment_) - t.nbytes);
  }
}

void GgufWriter::write(const std::filesystem::path& path) const {
  atomic_write_file(path, [this](FileSink& sink) { write_to(sink); });
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  VectorSink sink;
  write_to(sink);
  return std::move(sink.out);
}

}  // namespace spore
