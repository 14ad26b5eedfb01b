// The GGUF reader (NOTE [GGUF reader]): header parse and validation over a mapped file.
#include <cstring>

#include "spore/error.h"
#include "spore/format.h"
#include "spore/gguf.h"

namespace spore {

namespace {

constexpr uint32_t kMaxArrayDepth = 4;  // nested arrays; real files use 1
constexpr uint32_t kMaxDimsGguf = 4;    // GGML_MAX_DIMS
constexpr uint64_t kDefaultAlignment = 32;

// Reads little-endian values from the header, each failure a kFormat naming what was being read.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size, const std::string& source)
      : p_(data), n_(size), source_(source) {}
  size_t pos() const { return pos_; }
  size_t remaining() const { return n_ - pos_; }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorCode::kFormat, "GGUF file '" + source_ + "': " + what + " (at byte " +
                                        std::to_string(pos_) + " of " + std::to_string(n_) + ")");
  }
  void need(size_t bytes, const std::string& what) const {
    if (bytes > remaining())
      fail(what + " needs " + std::to_string(bytes) + " bytes; the file ends " +
           std::to_string(remaining()) + " bytes later");
  }
  template <class T>
  T read(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string read_string(const std::string& what) {
    const uint64_t len = read<uint64_t>(what + " (string length)");
    if (len > remaining())
      fail(what + " is a string of " + std::to_string(len) + " bytes; only " +
           std::to_string(remaining()) + " remain");
    std::string s(reinterpret_cast<const char*>(p_ + pos_), (size_t)len);
    pos_ += (size_t)len;
    return s;
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  const std::string& source_;
};

size_t min_encoded_size(GgufType t) {
  switch (t) {
    case GgufType::kUInt8: case GgufType::kInt8: case GgufType::kBool: return 1;
    case GgufType::kUInt16: case GgufType::kInt16: return 2;
    case GgufType::kUInt32: case GgufType::kInt32: case GgufType::kFloat32: return 4;
    case GgufType::kUInt64: case GgufType::kInt64: case GgufType::kFloat64: return 8;
    case GgufType::kString: return 8;
    case GgufType::kArray: return 12;
  }
  return 1;
}

bool known_type(uint32_t t) { return t <= 12; }

GgufValue read_value(Cursor& c, GgufType type, const std::string& what, uint32_t depth) {
  GgufValue v;
  v.type = type;
  switch (type) {
    case GgufType::kUInt8: v.value = (uint64_t)c.read<uint8_t>(what); break;
    case GgufType::kInt8: v.value = (int64_t)c.read<int8_t>(what); break;
    case GgufType::kUInt16: v.value = (uint64_t)c.read<uint16_t>(what); break;
    case GgufType::kInt16: v.value = (int64_t)c.read<int16_t>(what); break;
    case GgufType::kUInt32: v.value = (uint64_t)c.read<uint32_t>(what); break;
    case GgufType::kInt32: v.value = (int64_t)c.read<int32_t>(what); break;
    case GgufType::kUInt64: v.value = c.read<uint64_t>(what); break;
    case GgufType::kInt64: v.value = c.read<int64_t>(what); break;
    case GgufType::kFloat32: v.value = (double)c.read<float>(what); break;
    case GgufType::kFloat64: v.value = c.read<double>(what); break;
    case GgufType::kBool: {
      const uint8_t b = c.read<uint8_t>(what);
      if (b > 1) c.fail(what + " is a bool with byte value " + std::to_string(b));
      v.value = b == 1;
      break;
    }
    case GgufType::kString: v.value = c.read_string(what); break;
    case GgufType::kArray: {
      if (depth >= kMaxArrayDepth) c.fail(what + " nests arrays deeper than " + std::to_string(kMaxArrayDepth));
      const uint32_t et = c.read<uint32_t>(what + " (array element type)");
      if (!known_type(et)) c.fail(what + " has unknown array element type " + std::to_string(et));
      v.element_type = (GgufType)et;
      const uint64_t count = c.read<uint64_t>(what + " (array length)");
      // Every element takes at least min_encoded_size bytes: a count the file cannot hold is
      // refused before anything is allocated for it.
      if (count > c.remaining() / min_encoded_size(v.element_type))
        c.fail(what + " claims " + std::to_string(count) + " elements of type " +
               gguf_type_name(v.element_type) + "; the rest of the file holds at most " +
               std::to_string(c.remaining() / min_encoded_size(v.element_type)));
      std::vector<GgufValue> items;
      items.reserve((size_t)count);
      for (uint64_t k = 0; k < count; ++k)
        items.push_back(read_value(c, v.element_type, what + "[" + std::to_string(k) + "]", depth + 1));
      v.value = std::move(items);
      break;
    }
  }
  return v;
}

}  // namespace

const char* gguf_type_name(GgufType type) {
  switch (type) {
    case GgufType::kUInt8: return "uint8";
    case GgufType::kInt8: return "int8";
    case GgufType::kUInt16: return "uint16";
    case GgufType::kInt16: return "int16";
    case GgufType::kUInt32: return "uint32";
    case GgufType::kInt32: return "int32";
    case GgufType::kFloat32: return "float32";
    case GgufType::kBool: return "bool";
    case GgufType::kString: return "string";
    case GgufType::kArray: return "array";
    case GgufType::kUInt64: return "uint64";
    case GgufType::kInt64: return "int64";
    case GgufType::kFloat64: return "float64";
  }
  return "unknown";
}

bool GgufValue::is_integer() const {
  return std::holds_alternative<uint64_t>(value) || std::holds_alternative<int64_t>(value);
}

uint64_t GgufTensorInfo::numel() const {
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;  // validated against overflow when read
  return n;
}

struct GgufFile::Impl {
  std::string source;
  Tensor bytes;  // uint8 over the whole file (a mapping, or an owned copy)
  const uint8_t* data = nullptr;
  size_t size = 0;
  uint32_t version = 0;
  uint64_t alignment = kDefaultAlignment;
  uint64_t data_offset = 0;
  std::map<std::string, GgufValue, std::less<>> metadata;
  std::vector<GgufTensorInfo> tensors;
  std::map<std::string, size_t, std::less<>> tensor_index;

  void parse();
};

void GgufFile::Impl::parse() {
  Cursor c(data, size, source);
  const uint32_t magic = c.read<uint32_t>("the magic");
  if (std::memcmp(data, "GGUF", 4) != 0) c.fail("does not start with the magic 'GGUF'");
  (void)magic;
  version = c.read<uint32_t>("the version");
  if (version == 1)
    throw Error(ErrorCode::kVersion, "GGUF file '" + source + "' is GGUF version 1 (32-bit counts), "
                                     "which this reader does not read; convert it with a current "
                                     "llama.cpp (versions 2 and 3 are read)");
  if (version > 0xFFFF && (__builtin_bswap32(version) == 2 || __builtin_bswap32(version) == 3))
    throw Error(ErrorCode::kUnsupported, "GGUF file '" + source + "' is big-endian; only "
                                         "little-endian GGUF files are read");
  if (version != 2 && version != 3)
    throw Error(ErrorCode::kVersion, "GGUF file '" + source + "' has version " +
                                         std::to_string(version) + "; this reader knows 2 and 3");
  const uint64_t n_tensors = c.read<uint64_t>("the tensor count");
  const uint64_t n_kv = c.read<uint64_t>("the metadata count");
  if (n_kv > c.remaining() / 13)  // key length (8) + key (>= 1) + type (4) + value (>= 1)... at least 13
    c.fail("claims " + std::to_string(n_kv) + " metadata entries, more than the file can hold");
  for (uint64_t k = 0; k < n_kv; ++k) {
    const std::string what = "metadata entry " + std::to_string(k);
    std::string key = c.read_string(what + " (key)");
    const uint32_t t = c.read<uint32_t>("the type of '" + key + "'");
    if (!known_type(t)) c.fail("metadata '" + key + "' has unknown value type " + std::to_string(t));
    GgufValue v = read_value(c, (GgufType)t, "metadata '" + key + "'", 0);
    if (metadata.count(key)) c.fail("metadata key '" + key + "' appears twice");
    metadata.emplace(std::move(key), std::move(v));
  }
  if (auto it = metadata.find("general.alignment"); it != metadata.end()) {
    const GgufValue& a = it->second;
    if (a.type != GgufType::kUInt32)
      c.fail(std::string("metadata 'general.alignment' must be uint32, not ") + gguf_type_name(a.type));
    alignment = std::get<uint64_t>(a.value);
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
      c.fail("metadata 'general.alignment' is " + std::to_string(alignment) +
             "; it must be a power of two");
  }
  if (n_tensors > c.remaining() / 24)  // name length (8) + n_dims (4) + type (4) + offset (8)
    c.fail("claims " + std::to_string(n_tensors) + " tensors, more than the file can hold");
  tensors.reserve((size_t)n_tensors);
  for (uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensorInfo info;
    info.name = c.read_string("tensor info " + std::to_string(k) + " (name)");
    const std::string what = "tensor '" + info.name + "'";
    const uint32_t nd = c.read<uint32_t>(what + " (dimension count)");
    if (nd > kMaxDimsGguf)
      c.fail(what + " has " + std::to_string(nd) + " dimensions; GGUF allows at most " +
             std::to_string(kMaxDimsGguf));
    uint64_t numel = 1;
    for (uint32_t d = 0; d < nd; ++d) {
      const uint64_t dim = c.read<uint64_t>(what + " (dimension " + std::to_string(d) + ")");
      if (dim > (uint64_t)INT64_MAX || __builtin_mul_overflow(numel, dim, &numel) ||
          numel > (uint64_t)INT64_MAX)
        c.fail(what + " has dimensions whose product overflows");
      info.dims.push_back(dim);
    }
    const uint32_t type = c.read<uint32_t>(what + " (type)");
    const QuantTraits* found = find_quant_traits(type);
    if (!found) c.fail(what + " has unknown ggml type " + std::to_string(type));
    const QuantTraits& ti = *found;
    info.type = (GgmlType)type;
    if (!info.dims.empty() && info.dims[0] % ti.block_size != 0)
      c.fail(what + " of type " + ti.name + " has a first dimension of " +
             std::to_string(info.dims[0]) + ", not a multiple of its block size " +
             std::to_string(ti.block_size));
    info.nbytes = numel / ti.block_size * ti.block_bytes;  // numel <= 2^63, block_bytes small
    if (numel / ti.block_size > UINT64_MAX / ti.block_bytes) c.fail(what + " is too large");
    info.offset = c.read<uint64_t>(what + " (data offset)");
    if (info.offset % alignment != 0)
      c.fail(what + " starts at data offset " + std::to_string(info.offset) +
             ", not a multiple of the alignment " + std::to_string(alignment));
    if (tensor_index.count(info.name)) c.fail(what + " appears twice");
    tensor_index.emplace(info.name, tensors.size());
    tensors.push_back(std::move(info));
  }
  const uint64_t header_end = c.pos();
  data_offset = (header_end + alignment - 1) / alignment * alignment;
  if (!tensors.empty() && data_offset > size)
    c.fail("the data section would start at byte " + std::to_string(data_offset) +
           ", past the end of the file");
  const uint64_t data_size = data_offset <= size ? size - data_offset : 0;
  for (const GgufTensorInfo& t : tensors)
    if (t.offset > data_size || t.nbytes > data_size - t.offset)
      throw Error(ErrorCode::kFormat,
                  "GGUF file '" + source + "': tensor '" + t.name + "' needs bytes " +
                      std::to_string(t.offset) + ".." + std::to_string(t.offset + t.nbytes) +
                      " of the data section, which has " + std::to_string(data_size) +
                      " bytes (truncated file?)");
}

GgufFile::GgufFile(const std::filesystem::path& path) {
  auto impl = std::make_shared<Impl>();
  impl->source = path.string();
  impl->bytes = map_file(path);
  impl->data = static_cast<const uint8_t*>(impl->bytes.data_ptr());
  impl->size = (size_t)impl->bytes.numel();
  impl->parse();
  impl_ = std::move(impl);
}

GgufFile GgufFile::from_bytes(std::span<const uint8_t> bytes, std::string_view source) {
  auto impl = std::make_shared<Impl>();
  impl->source = std::string(source);
  auto owned = std::make_shared<std::vector<uint8_t>>(bytes.begin(), bytes.end());
  void* p = owned->empty() ? nullptr : owned->data();
  impl->bytes = Tensor::from_external(p, Shape{(int64_t)owned->size()}, DType::kUInt8,
                                      std::shared_ptr<const void>(owned, owned.get()), false);
  impl->data = owned->data();
  impl->size = owned->size();
  impl->parse();
  return GgufFile(std::shared_ptr<const Impl>(std::move(impl)));
}

const std::string& GgufFile::source() const { return impl_->source; }
uint32_t GgufFile::version() const { return impl_->version; }
uint64_t GgufFile::alignment() const { return impl_->alignment; }
uint64_t GgufFile::data_offset() const { return impl_->data_offset; }
const std::map<std::string, GgufValue, std::less<>>& GgufFile::metadata() const {
  return impl_->metadata;
}
bool GgufFile::contains(std::string_view key) const { return find(key) != nullptr; }
const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = impl_->metadata.find(key);
  return it == impl_->metadata.end() ? nullptr : &it->second;
}

namespace {
[[noreturn]] void wrong_type(const std::string& source, std::string_view key, const GgufValue& v,
                             const char* wanted) {
  std::string held = gguf_type_name(v.type);
  if (v.is_array()) held += std::string(" of ") + gguf_type_name(v.element_type);
  throw Error(ErrorCode::kFormat, "GGUF file '" + source + "': metadata '" + std::string(key) +
                                      "' must be " + wanted + ", not " + held);
}
int64_t as_int(const std::string& source, std::string_view key, const GgufValue& v) {
  if (auto* u = std::get_if<uint64_t>(&v.value)) {
    if (*u > (uint64_t)INT64_MAX) wrong_type(source, key, v, "an integer that fits int64");
    return (int64_t)*u;
  }
  if (auto* i = std::get_if<int64_t>(&v.value)) return *i;
  wrong_type(source, key, v, "an integer");
}
}  // namespace

const GgufValue& GgufFile::at(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v)
    throw Error(ErrorCode::kFormat, "GGUF file '" + impl_->source + "' has no metadata '" +
                                        std::string(key) + "'");
  return *v;
}

std::string GgufFile::get_string(std::string_view key) const {
  const GgufValue& v = at(key);
  if (v.type != GgufType::kString) wrong_type(impl_->source, key, v, "a string");
  return std::get<std::string>(v.value);
}
int64_t GgufFile::get_int(std::string_view key) const { return as_int(impl_->source, key, at(key)); }
double GgufFile::get_float(std::string_view key) const {
  const GgufValue& v = at(key);
  if (auto* d = std::get_if<double>(&v.value)) return *d;
  wrong_type(impl_->source, key, v, "a float");
}
bool GgufFile::get_bool(std::string_view key) const {
  const GgufValue& v = at(key);
  if (auto* b = std::get_if<bool>(&v.value)) return *b;
  wrong_type(impl_->source, key, v, "a bool");
}
std::vector<std::string> GgufFile::get_strings(std::string_view key) const {
  const GgufValue& v = at(key);
  if (!v.is_array() || v.element_type != GgufType::kString) wrong_type(impl_->source, key, v, "an array of strings");
  std::vector<std::string> out;
  const auto& items = std::get<std::vector<GgufValue>>(v.value);
  out.reserve(items.size());
  for (const GgufValue& e : items) out.push_back(std::get<std::string>(e.value));
  return out;
}
std::vector<int64_t> GgufFile::get_ints(std::string_view key) const {
  const GgufValue& v = at(key);
  if (!v.is_array()) wrong_type(impl_->source, key, v, "an array of integers");
  std::vector<int64_t> out;
  for (const GgufValue& e : std::get<std::vector<GgufValue>>(v.value)) {
    if (!e.is_integer()) wrong_type(impl_->source, key, v, "an array of integers");
    out.push_back(as_int(impl_->source, key, e));
  }
  return out;
}
std::vector<double> GgufFile::get_floats(std::string_view key) const {
  const GgufValue& v = at(key);
  if (!v.is_array() || (v.element_type != GgufType::kFloat32 && v.element_type != GgufType::kFloat64))
    wrong_type(impl_->source, key, v, "an array of floats");
  std::vector<double> out;
  for (const GgufValue& e : std::get<std::vector<GgufValue>>(v.value)) out.push_back(std::get<double>(e.value));
  return out;
}

const std::vector<GgufTensorInfo>& GgufFile::tensors() const { return impl_->tensors; }

const GgufTensorInfo& GgufFile::tensor_info(std::string_view name) const {
  auto it = impl_->tensor_index.find(name);
  if (it == impl_->tensor_index.end())
    throw Error(ErrorCode::kIndex, "GGUF file '" + impl_->source + "' has no tensor '" +
                                       std::string(name) + "'; it has " +
                                       std::to_string(impl_->tensors.size()) + " tensors");
  return impl_->tensors[it->second];
}

std::span<const uint8_t> GgufFile::tensor_bytes(std::string_view name) const {
  const GgufTensorInfo& t = tensor_info(name);
  return {impl_->data + impl_->data_offset + t.offset, (size_t)t.nbytes};
}

Tensor GgufFile::tensor(std::string_view name) const {
  const GgufTensorInfo& t = tensor_info(name);
  // Plain types as their dtype; blocks (and int16, which has no dtype) as raw bytes.
  const QuantTraits& q = quant_traits(t.type);
  const DType dtype = q.dtype;
  const bool typed = q.block_size == 1 && dtype != DType::kUInt8;
  const uint64_t at = impl_->data_offset + t.offset;
  if (!typed) return view_bytes(impl_->bytes, at, Shape{(int64_t)t.nbytes}, DType::kUInt8);
  std::vector<int64_t> dims;
  for (size_t k = t.dims.size(); k-- > 0;) dims.push_back((int64_t)t.dims[k]);
  return view_bytes(impl_->bytes, at, Shape(dims), dtype);
}

}  // namespace spore
