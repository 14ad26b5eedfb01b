#include "io/safetensors_format.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "io/json_depth.h"
#include "spore/error.h"

namespace spore::io {
namespace {

using nlohmann::json;
static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host needs byte swapping here");

struct Code {
  const char* code;
  DType dtype;
  int rank;  // position in the reference implementation's Dtype enum (its writer sorts by it)
};
constexpr Code kCodes[] = {
    {"BOOL", DType::kBool, 0},    {"U8", DType::kUInt8, 4},       {"I8", DType::kInt8, 5},
    {"F16", DType::kFloat16, 11}, {"BF16", DType::kBFloat16, 12}, {"I32", DType::kInt32, 13},
    {"F32", DType::kFloat32, 15}, {"F64", DType::kFloat64, 16},   {"I64", DType::kInt64, 17},
};
// Codes the format defines but Spore has no dtype for: a clear kDType, not "unknown".
constexpr const char* kKnownUnsupported[] = {
    "F4", "F6_E2M3", "F6_E3M2", "F8_E5M2", "F8_E4M3", "F8_E8M0", "I16", "U16", "U32", "U64", "C64"};

const Code& code_of(DType t) {
  for (const Code& c : kCodes)
    if (c.dtype == t) return c;
  return kCodes[0];  // unreachable: every DType has a code
}

std::string prefix(std::string_view source) {
  return "safetensors file '" + std::string(source) + "': ";
}
std::string prefix(std::string_view source, std::string_view tensor) {
  return prefix(source) + "tensor '" + std::string(tensor) + "': ";
}
[[noreturn]] void fail(ErrorCode code, const std::string& msg) {
  throw Error(code, msg);
}

std::string supported_codes() {
  std::string s;
  for (const Code& c : kCodes) s += (s.empty() ? "" : ", ") + std::string(c.code);
  return s;
}

// A JSON value as a non-negative integer that fits in uint64 (rejects floats, negatives, others).
bool as_u64(const json& j, uint64_t& out) {
  if (j.is_number_unsigned()) {
    out = j.get<uint64_t>();
    return true;
  }
  if (j.is_number_integer() && j.get<int64_t>() >= 0) {
    out = (uint64_t)j.get<int64_t>();
    return true;
  }
  return false;
}

std::string short_dump(const json& j) {
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

DType parse_dtype(const json& j, std::string_view source, const std::string& name) {
  if (!j.is_string())
    fail(ErrorCode::kFormat,
         prefix(source, name) + "\"dtype\" must be a string, got " + short_dump(j));
  const std::string& s = j.get_ref<const std::string&>();
  for (const Code& c : kCodes)
    if (s == c.code) return c.dtype;
  for (const char* c : kKnownUnsupported)
    if (s == c)
      fail(ErrorCode::kDType, prefix(source, name) + "dtype " + s +
                                  " is not supported by Spore (supported: " + supported_codes() +
                                  "); convert the tensor to one of those before saving");
  fail(ErrorCode::kFormat, prefix(source, name) + "unknown dtype code " + short_dump(j) +
                               " (safetensors codes Spore reads: " + supported_codes() + ")");
}

Shape parse_shape(const json& j, DType dtype, std::string_view source, const std::string& name,
                  uint64_t& nbytes) {
  if (!j.is_array())
    fail(ErrorCode::kFormat, prefix(source, name) +
                                 "\"shape\" must be an array of non-negative "
                                 "integers, got " +
                                 short_dump(j));
  std::vector<int64_t> dims;
  // NOTE [Shape overflow]: the extents other than 0 must multiply within int64 even when one is
  // 0, since an empty tensor still gets strides from them.
  uint64_t numel = 1, extents = 1;
  bool overflow = false, empty = false;
  for (const json& d : j) {
    uint64_t v;
    if (!as_u64(d, v))
      fail(ErrorCode::kFormat,
           prefix(source, name) + "shape " + short_dump(j) +
               " has a dimension that is not a non-negative integer: " + short_dump(d));
    if (v > (uint64_t)std::numeric_limits<int64_t>::max()) overflow = true;
    empty |= v == 0;
    if (__builtin_mul_overflow(extents, v == 0 ? 1 : v, &extents)) overflow = true;
    dims.push_back((int64_t)v);
  }
  numel = empty ? 0 : extents;
  if (overflow || extents > (uint64_t)std::numeric_limits<int64_t>::max() ||
      __builtin_mul_overflow(numel, (uint64_t)dtype_size(dtype), &nbytes))
    fail(ErrorCode::kFormat, prefix(source, name) + "shape " + short_dump(j) +
                                 " has more elements than 64-bit sizes can count");
  if (dims.size() > (size_t)kMaxDims)
    fail(ErrorCode::kUnsupported, prefix(source, name) + "shape " + short_dump(j) + " has " +
                                      std::to_string(dims.size()) +
                                      " dimensions; Spore tensors "
                                      "have at most " +
                                      std::to_string(kMaxDims));
  return Shape(dims);
}

SafeTensorInfo parse_entry(const std::string& name, const json& v, uint64_t buffer_size,
                           std::string_view source) {
  if (!v.is_object())
    fail(ErrorCode::kFormat, prefix(source, name) +
                                 "entry must be an object with \"dtype\", "
                                 "\"shape\" and \"data_offsets\", got " +
                                 short_dump(v));
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key))
      fail(ErrorCode::kFormat, prefix(source, name) + "entry has no \"" + key + "\"");
  SafeTensorInfo info;
  info.name = name;
  info.dtype = parse_dtype(v.at("dtype"), source, name);
  uint64_t nbytes = 0;
  info.shape = parse_shape(v.at("shape"), info.dtype, source, name, nbytes);
  const json& off = v.at("data_offsets");
  if (!off.is_array() || off.size() != 2 || !as_u64(off[0], info.begin) ||
      !as_u64(off[1], info.end))
    fail(ErrorCode::kFormat, prefix(source, name) +
                                 "\"data_offsets\" must be two non-negative "
                                 "integers [begin, end], got " +
                                 short_dump(off));
  std::string offs =
      "data_offsets [" + std::to_string(info.begin) + ", " + std::to_string(info.end) + "]";
  if (info.begin > info.end)
    fail(ErrorCode::kFormat, prefix(source, name) + offs + " end before they begin");
  if (info.end > buffer_size)
    fail(ErrorCode::kFormat, prefix(source, name) + offs + " run past the data buffer of " +
                                 std::to_string(buffer_size) + " bytes (file truncated?)");
  if (info.end - info.begin != nbytes)
    fail(ErrorCode::kFormat, prefix(source, name) + offs + " hold " +
                                 std::to_string(info.end - info.begin) + " bytes but shape " +
                                 info.shape.str() + " of " + code_of(info.dtype).code + " needs " +
                                 std::to_string(nbytes));
  return info;
}

// Guards the parse: duplicate keys (nlohmann keeps the last silently; a duplicate tensor name
// means two different tensors claim one name). Nesting deeper than any valid header needs is the
// parse's depth bound (kMaxHeaderDepth).
class KeyTracker : public io::JsonWatch {
 public:
  explicit KeyTracker(std::string_view source) : source_(source) {}

  void open_object() override { objects_.emplace_back(); }
  void close_object() override { objects_.pop_back(); }
  void key(const std::string& key, int depth) override {
    if (depth == 1) top_key_ = key;
    if (objects_.back().insert(key).second) return;
    if (depth == 1)
      fail(ErrorCode::kFormat, prefix(source_) + "tensor name '" + key + "' appears twice in the header");
    fail(ErrorCode::kFormat, prefix(source_, top_key_) + "key '" + key + "' appears twice in its entry");
  }

 private:
  std::string_view source_;
  std::vector<std::set<std::string>> objects_;
  std::string top_key_;  // the tensor whose entry is being parsed
};

// A header is an object of entries whose values nest at most a few levels ("__metadata__" is one
// object of strings; an entry holds shape and data_offsets arrays).
constexpr int kMaxHeaderDepth = 8;

}  // namespace

uint64_t safetensors_header_length(const uint8_t prefix8[8], uint64_t file_size,
                                   std::string_view source) {
  if (file_size < 8)
    fail(ErrorCode::kFormat, prefix(source) + "only " + std::to_string(file_size) +
                                 " bytes, shorter than the 8-byte header length");
  uint64_t n;
  std::memcpy(&n, prefix8, 8);  // little-endian (static_assert above)
  if (n > file_size - 8)
    fail(ErrorCode::kFormat, prefix(source) + "header length " + std::to_string(n) +
                                 " runs past the end of the file (" + std::to_string(file_size) +
                                 " bytes): not a safetensors file, or truncated");
  if (n > kSafeTensorsMaxHeader)
    fail(ErrorCode::kFormat, prefix(source) + "header length " + std::to_string(n) +
                                 " exceeds the limit of " + std::to_string(kSafeTensorsMaxHeader) +
                                 " bytes");
  if (n < 2)
    fail(ErrorCode::kFormat,
         prefix(source) + "header length " + std::to_string(n) + " is too short for a JSON object");
  return n;
}

SafeTensorsHeader parse_safetensors_header(std::string_view text, uint64_t header_length,
                                           uint64_t buffer_size, std::string_view source) {
  if (text.empty() || text[0] != '{')
    fail(ErrorCode::kFormat, prefix(source) +
                                 "the header does not start with '{': not a "
                                 "safetensors file");
  json root;
  try {
    KeyTracker tracker(source);
    root = io::parse_json_bounded<json>(text, kMaxHeaderDepth, &tracker);
  } catch (const io::JsonTooDeep&) {
    fail(ErrorCode::kFormat, prefix(source) + "header JSON nests deeper than a safetensors header can (more than " +
                                 std::to_string(kMaxHeaderDepth) + " levels)");
  } catch (const json::exception& e) {
    fail(ErrorCode::kFormat, prefix(source) + "the header is not valid JSON: " + e.what());
  }
  if (!root.is_object())
    fail(ErrorCode::kFormat, prefix(source) + "the header must be a JSON object");

  SafeTensorsHeader h;
  h.header_length = header_length;
  h.buffer_size = buffer_size;
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object())
        fail(ErrorCode::kFormat, prefix(source) + "\"__metadata__\" must be an object of strings");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string())
          fail(ErrorCode::kFormat, prefix(source) + "\"__metadata__\" value of '" + m.key() +
                                       "' must be a string, got " + short_dump(*m));
        h.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    h.tensors.push_back(parse_entry(it.key(), *it, buffer_size, source));
  }

  // The tensors must tile the buffer: sorted by offsets, each starts where the last one ended and
  // the last ends at the end of the file. This rules out overlaps (two tensors aliasing bytes),
  // gaps and trailing garbage, as the reference reader does.
  std::vector<const SafeTensorInfo*> by_offset;
  for (const auto& t : h.tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const auto* a, const auto* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t expected = 0;
  const SafeTensorInfo* prev = nullptr;
  for (const auto* t : by_offset) {
    std::string offs =
        "data_offsets [" + std::to_string(t->begin) + ", " + std::to_string(t->end) + "]";
    if (t->begin < expected)
      fail(ErrorCode::kFormat, prefix(source, t->name) + offs + " overlap tensor '" + prev->name +
                                   "', which ends at " + std::to_string(expected));
    if (t->begin > expected)
      fail(ErrorCode::kFormat, prefix(source, t->name) + offs + " leave a gap of " +
                                   std::to_string(t->begin - expected) + " bytes after " +
                                   (prev ? "tensor '" + prev->name + "'" : "the buffer start"));
    expected = t->end;
    prev = t;
  }
  if (expected != buffer_size)
    fail(ErrorCode::kFormat, prefix(source) + "the tensors cover " + std::to_string(expected) +
                                 " bytes of a data buffer of " + std::to_string(buffer_size) +
                                 " bytes" + (prev ? " (last: '" + prev->name + "')" : "") +
                                 ": the file has trailing bytes or a wrong header");

  std::sort(h.tensors.begin(), h.tensors.end(),
            [](const SafeTensorInfo& a, const SafeTensorInfo& b) { return a.name < b.name; });
  return h;
}

SafeTensorsHeader parse_safetensors_bytes(const uint8_t* data, size_t size,
                                          std::string_view source) {
  if (size < 8)
    fail(ErrorCode::kFormat, prefix(source) + "only " + std::to_string(size) +
                                 " bytes, shorter than the 8-byte header length");
  uint64_t n = safetensors_header_length(data, size, source);
  std::string_view text(reinterpret_cast<const char*>(data + 8), (size_t)n);
  return parse_safetensors_header(text, n, size - 8 - n, source);
}

void check_bool_bytes(const uint8_t* data, size_t n, const SafeTensorInfo& info,
                      std::string_view source) {
  for (size_t i = 0; i < n; ++i)
    if (data[i] > 1)
      fail(ErrorCode::kFormat, prefix(source, info.name) + "BOOL element " + std::to_string(i) +
                                   " holds byte " + std::to_string(data[i]) +
                                   "; BOOL bytes must be 0 or 1");
}

bool safetensors_data_order(const SafeTensorInfo& a, const SafeTensorInfo& b) {
  int ra = code_of(a.dtype).rank, rb = code_of(b.dtype).rank;
  return ra != rb ? ra > rb : a.name < b.name;
}

std::string build_safetensors_header(const std::vector<SafeTensorInfo>& entries,
                                     const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json root = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    root["__metadata__"] = std::move(m);
  }
  for (const SafeTensorInfo& e : entries) {
    nlohmann::ordered_json t = nlohmann::ordered_json::object();
    t["dtype"] = code_of(e.dtype).code;
    t["shape"] = e.shape.to_vector();
    t["data_offsets"] = {e.begin, e.end};
    root[e.name] = std::move(t);
  }
  std::string text;
  try {
    text = root.dump();
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorCode::kValue, std::string("save_safetensors: a tensor name or metadata string is "
                                        "not valid UTF-8: ") +
                                e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

}  // namespace spore::io

namespace spore {
const char* safetensors_dtype_code(DType dtype) {
  return io::code_of(dtype).code;
}
}  // namespace spore
