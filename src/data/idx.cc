// IDX files (the MNIST format): bytes 0-1 zero, byte 2 the element type, byte 3 the number of
// dimensions, then each dimension as a big-endian uint32, then the elements, big-endian.
// MNIST images are 0x00000803 (uint8, 3 dims), labels 0x00000801 (uint8, 1 dim).
#include <bit>
#include <vector>

#include "data/file_io.h"
#include "data/node.h"
#include "data/stages.h"
#include "data/tensor_bytes.h"

namespace spore::data {

namespace detail {
namespace {

constexpr bool kHostBig = std::endian::native == std::endian::big;

struct IdxType {
  unsigned char code;
  DType dtype;
};
constexpr IdxType kIdxTypes[] = {{0x08, DType::kUInt8},
                                 {0x09, DType::kInt8},
                                 {0x0C, DType::kInt32},
                                 {0x0D, DType::kFloat32},
                                 {0x0E, DType::kFloat64}};

std::string hex_magic(const unsigned char* m) {
  static const char* digits = "0123456789abcdef";
  std::string s = "0x";
  for (int i = 0; i < 4; ++i) {
    s += digits[m[i] >> 4];
    s += digits[m[i] & 15];
  }
  return s;
}

Tensor read_idx(const std::string& path) {
  InFile f(path);
  unsigned char magic[4];
  f.read(magic, 4, "the IDX magic number");
  if (magic[0] != 0 || magic[1] != 0)
    format_error(path, "not an IDX file: the magic number is " + hex_magic(magic) +
                           " but IDX files start with two zero bytes (MNIST images: 0x00000803, "
                           "labels: 0x00000801)");
  const IdxType* type = nullptr;
  for (const IdxType& t : kIdxTypes)
    if (t.code == magic[2]) type = &t;
  if (!type)
    format_error(path, "the magic number " + hex_magic(magic) + " names element type 0x" +
                           hex_magic(magic).substr(6, 2) +
                           ", which Spore does not read (0x08 uint8, 0x09 int8, 0x0C int32, 0x0D "
                           "float32, 0x0E float64)");
  const int ndim = magic[3];
  if (ndim < 1 || ndim > kMaxDims)
    format_error(path, "the magic number " + hex_magic(magic) + " says " + std::to_string(ndim) +
                           " dimensions; Spore reads 1 to " + std::to_string(kMaxDims));
  Shape shape;
  for (int d = 0; d < ndim; ++d) {
    unsigned char b[4];
    f.read(b, 4, "dimension " + std::to_string(d) + " of " + std::to_string(ndim));
    shape.push_back(
        (int64_t)((uint64_t)b[0] << 24 | (uint64_t)b[1] << 16 | (uint64_t)b[2] << 8 | b[3]));
  }
  const size_t item = dtype_size(type->dtype);
  uint64_t bytes = 0;
  if (!checked_bytes(shape, item, bytes))
    format_error(path, "the dimensions " + shape.str() + " are too large to be real");
  const uint64_t at = f.tell(), have = f.size() - at;
  if (have != bytes)
    format_error(
        path, std::string(have < bytes ? "the file is truncated" : "the file has trailing bytes") +
                  ": dimensions " + shape.str() + " of " + dtype_name(type->dtype) + " need " +
                  std::to_string(bytes) + " bytes of data from byte offset " + std::to_string(at) +
                  " but the file holds " + std::to_string(have));
  Tensor t = Tensor::empty(shape, type->dtype, Device::cpu());
  f.read(t.data_ptr(), bytes, "the elements");
  if (item > 1 && !kHostBig) swap_bytes(t.data_ptr(), (uint64_t)t.numel(), item);
  return t;
}

}  // namespace
}  // namespace detail

Tensor load_idx(const std::string& path) {
  return detail::read_idx(path);
}

void save_idx(const std::string& path, const Tensor& tensor) {
  Tensor t = detail::to_host(tensor);
  const detail::IdxType* type = nullptr;
  for (const auto& k : detail::kIdxTypes)
    if (k.dtype == t.dtype()) type = &k;
  if (!type)
    throw Error(ErrorCode::kUnsupported,
                "save_idx('" + path + "'): IDX has no element type for " +
                    std::string(dtype_name(t.dtype())) +
                    " (it has uint8, int8, int32, float32, float64); cast first");
  if (t.ndim() < 1)
    throw Error(ErrorCode::kShape,
                "save_idx('" + path + "'): a 0-d tensor; IDX needs at least one dimension");
  for (int64_t d : t.shape())
    if (d > 0xffffffffll)
      throw Error(ErrorCode::kShape, "save_idx('" + path + "'): extent " + std::to_string(d) +
                                         " does not fit IDX's 32-bit dimensions");
  std::vector<unsigned char> head = {0, 0, type->code, (unsigned char)t.ndim()};
  for (int64_t d : t.shape())
    for (int s = 24; s >= 0; s -= 8) head.push_back((unsigned char)((uint64_t)d >> s));
  std::vector<unsigned char> body(t.nbytes());
  detail::copy_elements(t, body.data());
  if (t.itemsize() > 1 && !detail::kHostBig)
    detail::swap_bytes(body.data(), (uint64_t)t.numel(), t.itemsize());
  detail::OutFile f(path);
  f.write(head.data(), head.size());
  f.write(body.data(), body.size());
  f.close();
}

Dataset IdxSource(const std::string& images_path, const std::string& labels_path) {
  Tensor images = load_idx(images_path);
  if (labels_path.empty()) return Dataset(detail::make_table_node("idx", {"image"}, {images}));
  Tensor labels = load_idx(labels_path);
  if (labels.ndim() != 1)
    detail::format_error(
        labels_path,
        "a label file must have one dimension (magic 0x00000801) but this one has shape " +
            labels.shape().str());
  if (labels.shape()[0] != images.shape()[0])
    detail::format_error(labels_path, "holds " + std::to_string(labels.shape()[0]) +
                                          " labels but '" + images_path + "' holds " +
                                          std::to_string(images.shape()[0]) +
                                          " images; the files do not belong together");
  // Labels become int32, the dtype losses take for class indices.
  std::vector<int32_t> values((size_t)labels.numel());
  visit_dtype(labels.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> ||
                  std::is_same_v<T, bool>) {
      throw Error(ErrorCode::kInternal, "IdxSource: unexpected label dtype");
    } else {
      const T* p = labels.data<T>();
      for (size_t i = 0; i < values.size(); ++i) {
        if constexpr (std::is_floating_point_v<T>) {
          if (!(p[i] >= 0 && p[i] <= 2147483647.0 && p[i] == (T)(int64_t)p[i]))
            detail::format_error(labels_path, "label " + std::to_string(i) + " is " +
                                                  std::to_string(p[i]) +
                                                  ", not a non-negative integer class index");
        }
        values[i] = (int32_t)p[i];
      }
    }
  });
  Tensor label_tensor = Tensor::from_vector(values, Shape{labels.shape()[0]});
  return Dataset(detail::make_table_node("idx", {"image", "label"}, {images, label_tensor}));
}

}  // namespace spore::data
