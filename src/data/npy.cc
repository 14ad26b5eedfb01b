// NumPy .npy files (format versions 1.0, 2.0, 3.0) and NumpySource.
//
// Layout: "\x93NUMPY", major, minor, header length (uint16 LE in 1.0, uint32 LE in 2.0/3.0),
// then a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// padded with spaces and a newline, then the raw elements.
#include <bit>
#include <cstring>
#include <string>
#include <vector>

#include "data/file_io.h"
#include "data/node.h"
#include "data/stages.h"
#include "data/tensor_bytes.h"

namespace spore::data {

namespace detail {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr bool kHostBig = std::endian::native == std::endian::big;

struct NpyHeader {
  DType dtype = DType::kFloat32;
  bool swap = false;  // the file's byte order differs from the host's
  Shape shape;
  // A narrower integer type than dtype, widened on load (int16 and uint16 to int32, uint32 to
  // int64: every value exact): its size in bytes and signedness; 0 when the file holds dtype.
  int narrow = 0;
  bool narrow_signed = false;
};

// Reads the header dict: just enough of Python's literal syntax for what NumPy writes.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path, uint64_t base)
      : s_(text), path_(path), base_(base) {}

  NpyHeader parse() {
    std::string descr;
    bool have_descr = false, have_order = false, have_shape = false, fortran = false;
    std::vector<int64_t> dims;
    expect('{');
    for (;;) {
      skip_ws();
      if (peek() == '}') break;
      std::string key = string_literal();
      expect(':');
      skip_ws();
      if (key == "descr") {
        if (peek() == '[')
          fail(
              "'descr' is a list: a structured (record) array, which Spore cannot load; save "
              "each field as its own .npy file");
        descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        fortran = boolean();
        have_order = true;
      } else if (key == "shape") {
        dims = tuple();
        have_shape = true;
      } else {
        fail("unexpected key '" + key + "' in the header");
      }
      skip_ws();
      if (peek() == ',') ++p_;
    }
    if (!have_descr || !have_order || !have_shape)
      fail("the header lacks " + std::string(!have_descr   ? "'descr'"
                                             : !have_order ? "'fortran_order'"
                                                           : "'shape'"));
    NpyHeader h;
    if (dims.size() > (size_t)kMaxDims)
      throw Error(ErrorCode::kUnsupported,
                  "'" + path_ + "': the array has " + std::to_string(dims.size()) +
                      " dimensions; Spore tensors have at most " + std::to_string(kMaxDims));
    h.shape = Shape(dims);
    if (fortran && dims.size() > 1)
      throw Error(ErrorCode::kUnsupported,
                  "'" + path_ +
                      "': the array is stored in Fortran (column-major) order "
                      "(fortran_order: True, shape " +
                      h.shape.str() +
                      "); Spore reads C order only: "
                      "save it with np.save(path, np.ascontiguousarray(a))");
    set_dtype(descr, h);
    return h;
  }

 private:
  void set_dtype(const std::string& d, NpyHeader& h) {
    if (d.size() < 3) unknown_dtype(d);
    char order = d[0], kind = d[1];
    std::string size = d.substr(2);
    if (order != '<' && order != '>' && order != '|' && order != '=') unknown_dtype(d);
    struct Known {
      char kind;
      const char* size;
      DType dtype;
    };
    struct Widened {
      char kind;
      const char* size;
      DType dtype;
    };
    static const Widened widened[] = {{'i', "2", DType::kInt32}, {'u', "2", DType::kInt32}, {'u', "4", DType::kInt64}};
    for (const Widened& w : widened)
      if (w.kind == kind && size == w.size) {
        h.dtype = w.dtype;
        h.narrow = std::stoi(size);
        h.narrow_signed = kind == 'i';
        const bool file_big = order == '>' || (order == '=' && kHostBig);
        h.swap = file_big != kHostBig;
        return;
      }
    static const Known known[] = {{'b', "1", DType::kBool},    {'i', "1", DType::kInt8},
                                  {'u', "1", DType::kUInt8},   {'i', "4", DType::kInt32},
                                  {'i', "8", DType::kInt64},   {'f', "2", DType::kFloat16},
                                  {'f', "4", DType::kFloat32}, {'f', "8", DType::kFloat64}};
    for (const Known& k : known)
      if (k.kind == kind && size == k.size) {
        h.dtype = k.dtype;
        bool file_big = order == '>' || (order == '=' && kHostBig);
        h.swap = dtype_size(k.dtype) > 1 && file_big != kHostBig;
        return;
      }
    throw Error(
        ErrorCode::kDType,
        "'" + path_ + "': the array's dtype '" + d +
            "' has no Spore dtype; Spore loads b1 i1 u1 i4 i8 f2 f4 f8, and i2 u2 u4 widened (i2 and u2 to "
            "int32, u4 to int64) (e.g. '<f4' float32); "
            "convert it first, e.g. a.astype(np.float32) or a.astype(np.int64)");
  }
  [[noreturn]] void unknown_dtype(const std::string& d) {
    fail("'descr' is '" + d + "', not a NumPy dtype string");
  }

  [[noreturn]] void fail(const std::string& what) {
    format_error(path_, "not a valid .npy header (at byte offset " + std::to_string(base_ + p_) +
                            "): " + what + ". Header: " + excerpt());
  }
  std::string excerpt() const {
    std::string e;
    for (char c : s_.substr(0, 120)) e += (c >= 32 && c < 127) ? c : '?';
    return e + (s_.size() > 120 ? "..." : "");
  }
  char peek() const { return p_ < s_.size() ? s_[p_] : '\0'; }
  void skip_ws() {
    while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\t' || s_[p_] == '\n' || s_[p_] == '\r'))
      ++p_;
  }
  void expect(char c) {
    skip_ws();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++p_;
  }
  std::string string_literal() {
    skip_ws();
    char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    size_t end = s_.find(q, p_ + 1);
    if (end == std::string::npos) fail("a string is not closed");
    std::string v = s_.substr(p_ + 1, end - p_ - 1);
    p_ = end + 1;
    return v;
  }
  bool boolean() {
    if (s_.compare(p_, 4, "True") == 0) {
      p_ += 4;
      return true;
    }
    if (s_.compare(p_, 5, "False") == 0) {
      p_ += 5;
      return false;
    }
    fail("'fortran_order' is neither True nor False");
  }
  std::vector<int64_t> tuple() {
    expect('(');
    std::vector<int64_t> dims;
    for (;;) {
      skip_ws();
      if (peek() == ')') {
        ++p_;
        return dims;
      }
      if (peek() < '0' || peek() > '9') fail("a shape entry is not a non-negative integer");
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (v > (INT64_MAX - 9) / 10) fail("a shape entry is too large");
        v = v * 10 + (peek() - '0');
        ++p_;
      }
      if (peek() == 'L') ++p_;  // Python 2 long literals in old files
      dims.push_back(v);
      if (dims.size() > 64) fail("the shape has too many entries");
      skip_ws();
      if (peek() == ',')
        ++p_;
      else if (peek() != ')')
        fail("expected ',' or ')' in the shape");
    }
  }

  const std::string& s_;
  const std::string& path_;
  uint64_t base_;
  size_t p_ = 0;
};

NpyHeader read_header(InFile& f) {
  unsigned char prefix[8];
  f.read(prefix, 8, "the .npy magic and version");
  if (std::memcmp(prefix, kMagic, 6) != 0)
    format_error(f.path(), "not a .npy file: it does not start with the magic \\x93NUMPY");
  const int major = prefix[6], minor = prefix[7];
  uint64_t len = 0;
  if (major == 1) {
    unsigned char b[2];
    f.read(b, 2, "the header length");
    len = b[0] | (uint64_t)b[1] << 8;
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    f.read(b, 4, "the header length");
    len = b[0] | (uint64_t)b[1] << 8 | (uint64_t)b[2] << 16 | (uint64_t)b[3] << 24;
  } else {
    throw Error(ErrorCode::kVersion,
                "'" + f.path() + "': .npy format version " + std::to_string(major) + "." +
                    std::to_string(minor) +
                    " is newer than this reader knows (1.0, 2.0, 3.0); save it "
                    "with a NumPy that writes version 1.0 (the default)");
  }
  const uint64_t base = f.tell();
  if (len > f.size() - base)
    format_error(f.path(), "the file is truncated: the header length field says " +
                               std::to_string(len) + " bytes from byte offset " +
                               std::to_string(base) + " but the file has only " +
                               std::to_string(f.size() - base));
  std::string text(len, '\0');
  f.read(text.data(), len, "the header");
  return HeaderParser(text, f.path(), base).parse();
}

Tensor read_npy(const std::string& path) {
  InFile f(path);
  NpyHeader h = read_header(f);
  uint64_t bytes = 0;
  const size_t item = h.narrow ? (size_t)h.narrow : dtype_size(h.dtype);  // bytes per element in the file
  if (!checked_bytes(h.shape, item, bytes))
    format_error(path, "the header's shape " + h.shape.str() + " is too large to be real");
  const uint64_t at = f.tell(), have = f.size() - at;
  if (have != bytes)
    format_error(
        path, std::string(have < bytes ? "the file is truncated" : "the file has trailing bytes") +
                  ": shape " + h.shape.str() + " of " + dtype_name(h.dtype) + " needs " +
                  std::to_string(bytes) + " bytes of data after the header (from byte offset " +
                  std::to_string(at) + ") but the file holds " + std::to_string(have));
  Tensor t = Tensor::empty(h.shape, h.dtype, Device::cpu());
  if (h.narrow) {  // the file's narrower integers (bytes: the file's own size, checked above), widened
    std::vector<unsigned char> raw(bytes);
    f.read(raw.data(), bytes, "the array data");
    if (h.swap) swap_bytes(raw.data(), (uint64_t)t.numel(), (size_t)h.narrow);
    for (int64_t i = 0; i < t.numel(); ++i) {
      const unsigned char* p = raw.data() + i * h.narrow;
      int64_t v;
      if (h.narrow == 2) {
        uint16_t u;
        std::memcpy(&u, p, 2);
        v = h.narrow_signed ? (int64_t)(int16_t)u : (int64_t)u;
      } else {
        uint32_t u;
        std::memcpy(&u, p, 4);
        v = (int64_t)u;
      }
      if (h.dtype == DType::kInt32) static_cast<int32_t*>(t.data_ptr())[i] = (int32_t)v;
      else static_cast<int64_t*>(t.data_ptr())[i] = v;
    }
    return t;
  }
  f.read(t.data_ptr(), bytes, "the array data");
  if (h.swap) swap_bytes(t.data_ptr(), (uint64_t)t.numel(), dtype_size(h.dtype));
  if (h.dtype == DType::kBool) {  // any non-zero byte is true; a bool must hold 0 or 1
    auto* p = static_cast<unsigned char*>(t.data_ptr());
    for (uint64_t i = 0; i < bytes; ++i) p[i] = p[i] != 0;
  }
  return t;
}

const char* npy_descr(DType t, const std::string& path) {
  constexpr bool big = kHostBig;
  switch (t) {
    case DType::kBool:
      return "|b1";
    case DType::kInt8:
      return "|i1";
    case DType::kUInt8:
      return "|u1";
    case DType::kInt32:
      return big ? ">i4" : "<i4";
    case DType::kInt64:
      return big ? ">i8" : "<i8";
    case DType::kFloat16:
      return big ? ">f2" : "<f2";
    case DType::kFloat32:
      return big ? ">f4" : "<f4";
    case DType::kFloat64:
      return big ? ">f8" : "<f8";
    case DType::kBFloat16:
      break;
  }
  throw Error(ErrorCode::kUnsupported, "save_npy('" + path +
                                           "'): bfloat16 has no .npy dtype; cast the "
                                           "tensor to float32 first (exact) and save that");
}

}  // namespace
}  // namespace detail

Tensor load_npy(const std::string& path) {
  return detail::read_npy(path);
}

namespace {

// Magic, version, header length and the header dict, padded as NumPy pads them.
std::string npy_header(const char* descr, const Tensor& t) {
  std::string shape = "(";
  for (int i = 0; i < t.ndim(); ++i)
    shape += std::to_string(t.shape()[i]) + (t.ndim() == 1 ? "," : i + 1 < t.ndim() ? ", " : "");
  shape += ")";
  std::string dict =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // NumPy pads magic + version + length + dict + '\n' to a multiple of 64 bytes.
  size_t prefix = 10;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  int major = 1;
  if (total - prefix > 65535) {
    major = 2;
    prefix = 12;
    total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  }
  const uint64_t len = total - prefix;
  dict.append(len - dict.size() - 1, ' ');
  dict += '\n';
  std::string head(detail::kMagic, 6);
  head += (char)major;
  head += (char)0;
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) head += (char)((len >> (8 * i)) & 0xff);
  return head + dict;
}

}  // namespace

void save_npy(const std::string& path, const Tensor& tensor) {
  Tensor t = detail::to_host(tensor);
  const std::string head = npy_header(detail::npy_descr(t.dtype(), path), t);
  detail::OutFile f(path);
  f.write(head.data(), head.size());
  f.write_tensor(t);
  f.close();
}

namespace {

// The integer types .npy names that Spore carries in a wider dtype (save_npy_narrowed).
struct Narrow {
  const char *name, *descr;
  int bytes;
  int64_t lo, hi;
};
constexpr Narrow kNarrow[] = {{"int16", "<i2", 2, INT16_MIN, INT16_MAX},
                              {"uint16", "<u2", 2, 0, UINT16_MAX},
                              {"uint32", "<u4", 4, 0, UINT32_MAX}};

const Narrow* narrow_type(const std::string& type) {
  for (const Narrow& k : kNarrow)
    if (type == k.name) return &k;
  return nullptr;
}

}  // namespace

bool npy_has_narrow_type(const std::string& type) { return narrow_type(type) != nullptr; }

void save_npy_narrowed(const std::string& path, const Tensor& tensor, const std::string& type) {
  const Narrow* n = narrow_type(type);
  if (!n) throw Error(ErrorCode::kValue, "save_npy_narrowed('" + path + "'): '" + type + "' is not int16, uint16 or uint32");
  if (!is_integral(tensor.dtype()))
    throw Error(ErrorCode::kDType, "save_npy_narrowed('" + path + "'): the tensor is " + dtype_name(tensor.dtype()) +
                                       ", not an integer tensor");
  const Tensor t = detail::to_host(tensor).to(DType::kInt64).contiguous();
  const int64_t* v = t.data<int64_t>();
  std::string bytes((size_t)(t.numel() * n->bytes), '\0');
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (v[i] < n->lo || v[i] > n->hi)
      throw Error(ErrorCode::kValue, "save_npy_narrowed('" + path + "'): element " + std::to_string(i) + " is " +
                                         std::to_string(v[i]) + ", outside " + n->name);
    for (int b = 0; b < n->bytes; ++b) bytes[(size_t)(i * n->bytes + b)] = (char)(((uint64_t)v[i] >> (8 * b)) & 0xff);
  }
  const std::string head = npy_header(n->descr, t);
  detail::OutFile f(path);
  f.write(head.data(), head.size());
  f.write(bytes.data(), bytes.size());
  f.close();
}

Dataset NumpySource(const std::vector<std::pair<std::string, std::string>>& columns) {
  if (columns.empty()) throw Error(ErrorCode::kValue, "NumpySource: no (column, path) pairs given");
  std::vector<std::string> names;
  std::vector<Tensor> arrays;
  for (const auto& [name, path] : columns) {
    Tensor a = load_npy(path);
    if (a.ndim() == 0)
      throw Error(ErrorCode::kShape,
                  "NumpySource: '" + path + "' (column '" + name +
                      "') holds a 0-d array; a source needs an array whose first "
                      "axis counts the rows");
    if (!arrays.empty() && a.shape()[0] != arrays[0].shape()[0])
      throw Error(ErrorCode::kShape,
                  "NumpySource: '" + path + "' (column '" + name + "') has shape " +
                      a.shape().str() + " but '" + columns[0].second + "' (column '" +
                      columns[0].first + "') has " + arrays[0].shape().str() +
                      "; every file needs the same number of rows (first extent)");
    names.push_back(name);
    arrays.push_back(std::move(a));
  }
  return Dataset(detail::make_table_node("numpy", std::move(names), std::move(arrays)));
}

Dataset NumpySource(const std::string& path, const std::string& column) {
  return NumpySource(std::vector<std::pair<std::string, std::string>>{{column, path}});
}

}  // namespace spore::data
