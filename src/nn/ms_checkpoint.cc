// MindSpore's .ckpt (NOTE [MindSpore checkpoints]): a Checkpoint protobuf of Spore's own
// checkpoint.proto (proto/mindspore/), read into tensors and written back byte for byte as
// MindSpore writes it.
#include "spore/ms_checkpoint.h"

#include <cstring>
#include <fstream>
#include <limits>
#include <map>

#include "mindspore/checkpoint.pb.h"
#include "spore/error.h"
#include "spore/format.h"

namespace spore::ms {
namespace {

constexpr int64_t kMaxElements = int64_t{1} << 40;  // a tensor larger than this is a hostile shape

[[noreturn]] void fail(ErrorCode code, const std::string& what) { throw Error(code, what); }

// MindSpore's names (str(mindspore.float16) is "Float16") for the dtypes both have.
const std::pair<DType, const char*> kNames[] = {
    {DType::kFloat16, "Float16"}, {DType::kFloat32, "Float32"}, {DType::kFloat64, "Float64"}, {DType::kBFloat16, "BFloat16"},
    {DType::kInt8, "Int8"},       {DType::kInt32, "Int32"},     {DType::kInt64, "Int64"},     {DType::kUInt8, "UInt8"},
    {DType::kBool, "Bool"},
};

// MindSpore writes a file saved with crc_check=True with a trailer: "crc_num" and 10 bytes.
constexpr char kCrcMark[] = "crc_num";
constexpr size_t kCrcTrailer = sizeof(kCrcMark) - 1 + 10;

}  // namespace

std::string ms_dtype_name(DType t) {
  for (const auto& [d, n] : kNames)
    if (d == t) return n;
  fail(ErrorCode::kUnsupported, std::string("MindSpore checkpoints have no name for dtype ") + dtype_name(t));
}

DType dtype_from_ms_name(const std::string& name, const std::string& what) {
  for (const auto& [d, n] : kNames)
    if (name == n) return d;
  fail(ErrorCode::kUnsupported, what + " has the MindSpore dtype '" + name + "', which Spore reads no checkpoint data for");
}

namespace {
MsParams decode_checkpoint(std::span<const uint8_t> bytes, const std::string& label);
}  // namespace

MsParams read_ms_checkpoint_bytes(std::span<const uint8_t> bytes, const std::string& label) {
  const bool trailer = bytes.size() >= kCrcTrailer &&
                       std::memcmp(bytes.data() + bytes.size() - kCrcTrailer, kCrcMark, sizeof(kCrcMark) - 1) == 0;
  if (!trailer) return decode_checkpoint(bytes, label);
  try {
    return decode_checkpoint(bytes.first(bytes.size() - kCrcTrailer), label);  // the checksum is not verified here
  } catch (const Error&) {
    // A last tensor's bytes can end like a trailer (the ms_ckpt fuzz target wrote one): then the
    // whole file is the checkpoint. Neither reading: the first error is the one to report.
    try {
      return decode_checkpoint(bytes, label);
    } catch (const Error&) {
    }
    throw;
  }
}

namespace {
MsParams decode_checkpoint(std::span<const uint8_t> bytes, const std::string& label) {
  spore_ms_ckpt::Checkpoint ck;
  if (bytes.size() > (size_t)std::numeric_limits<int>::max() || !ck.ParseFromArray(bytes.data(), (int)bytes.size()))
    fail(ErrorCode::kFormat, label + ": not a MindSpore checkpoint (the bytes do not parse as MindSpore's Checkpoint "
                                     "protobuf; truncated, or saved encrypted with enc_key?)");
  // Every slice is checked against its parameter's shape and dtype first; the tensors are
  // allocated only once all the data is there, so a declared shape the file carries no data for is
  // never allocated (the ms_ckpt fuzz target found that).
  struct Entry {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    size_t bytes;  // what the shape and dtype need
    std::vector<uint8_t> data;
  };
  std::vector<Entry> entries;
  std::map<std::string, size_t> index;  // tag -> position in entries
  for (int k = 0; k < ck.value_size(); ++k) {
    const auto& v = ck.value(k);
    const std::string what = label + ": parameter '" + v.tag() + "'";
    if (v.tag().empty()) fail(ErrorCode::kFormat, label + ": value " + std::to_string(k) + " has an empty name");
    if (v.has_maptensor()) fail(ErrorCode::kUnsupported, what + " is a MapTensor, which Spore has no counterpart for");
    if (!v.has_tensor()) fail(ErrorCode::kFormat, what + " carries no tensor");
    const auto& t = v.tensor();
    const DType dtype = dtype_from_ms_name(t.tensor_type(), what);
    std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
    if ((int)shape.size() > kMaxDims) fail(ErrorCode::kUnsupported, what + " has " + std::to_string(shape.size()) + " dimensions");
    int64_t n = 1;
    for (int64_t d : shape) {
      if (d < 0) fail(ErrorCode::kFormat, what + " has a negative extent");
      if (d != 0 && n > kMaxElements / d) fail(ErrorCode::kFormat, what + " has a shape whose element count overflows");
      n *= d;
    }
    auto [it, fresh] = index.emplace(v.tag(), entries.size());
    if (fresh) {
      entries.push_back({v.tag(), dtype, shape, (size_t)n * dtype_size(dtype), {}});
    } else if (entries[it->second].shape != shape || entries[it->second].dtype != dtype) {
      fail(ErrorCode::kFormat, what + " appears twice with different shapes or dtypes");
    }
    Entry& e = entries[it->second];
    const std::string& c = t.tensor_content();
    if (e.data.size() + c.size() > e.bytes)
      fail(ErrorCode::kFormat, what + " holds more than the " + std::to_string(e.bytes) + " bytes its " + t.tensor_type() + " shape " +
                                   Shape(shape).str() + " needs");
    e.data.insert(e.data.end(), c.begin(), c.end());
  }
  MsParams out;
  for (Entry& e : entries) {
    if (e.data.size() != e.bytes)
      fail(ErrorCode::kFormat, label + ": parameter '" + e.name + "' holds " + std::to_string(e.data.size()) + " bytes; its " +
                                   dtype_name(e.dtype) + " shape " + Shape(e.shape).str() + " needs " + std::to_string(e.bytes));
    Tensor t = Tensor::empty(Shape(e.shape), e.dtype, Device::cpu());
    if (e.bytes) std::memcpy(t.data_ptr(), e.data.data(), e.bytes);
    out.push_back({e.name, std::move(t)});
  }
  return out;
}
}  // namespace

MsParams read_ms_checkpoint(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(ErrorCode::kIO, "cannot open MindSpore checkpoint " + path.string());
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  return read_ms_checkpoint_bytes(bytes, path.string());
}

std::vector<uint8_t> ms_checkpoint_bytes(const MsParams& params) {
  spore_ms_ckpt::Checkpoint ck;
  std::map<std::string, bool> seen;
  for (const auto& [name, value] : params) {
    if (name.empty()) fail(ErrorCode::kValue, "save_ms_checkpoint: a parameter has an empty name");
    if (!seen.emplace(name, true).second) fail(ErrorCode::kValue, "save_ms_checkpoint: the name '" + name + "' is given twice");
    if (!value.defined()) fail(ErrorCode::kValue, "save_ms_checkpoint: parameter '" + name + "' is an undefined tensor");
    if (value.numel() == 0) continue;  // MindSpore's save_checkpoint leaves out empty tensors too
    auto* v = ck.add_value();
    v->set_tag(name);
    auto* t = v->mutable_tensor();
    for (int64_t d : value.shape()) t->add_dims(d);
    // A scalar has no dims, as MindSpore writes it.
    t->set_tensor_type(ms_dtype_name(value.dtype()));
    const std::vector<uint8_t> b = value.to(Device::cpu()).contiguous().to_bytes();
    t->set_tensor_content(std::string(b.begin(), b.end()));
  }
  std::string s;
  // Deterministic: the fields in number order, as MindSpore's (Python) protobuf writes them.
  if (!ck.SerializeToString(&s)) fail(ErrorCode::kInternal, "save_ms_checkpoint: the checkpoint did not serialise");
  return {s.begin(), s.end()};
}

void save_ms_checkpoint(const MsParams& params, const std::filesystem::path& path) {
  atomic_write_file(path, ms_checkpoint_bytes(params));
}

void save_ms_checkpoint(const nn::Cell& net, const std::filesystem::path& path) {
  MsParams params;
  for (const auto& [name, p] : net.named_parameters()) params.push_back({name, p.value()});
  save_ms_checkpoint(params, path);
}

LoadReport load_ms_checkpoint_into(nn::Cell& net, const std::filesystem::path& path, bool strict) {
  std::map<std::string, Tensor> by_name;
  for (auto& [name, t] : read_ms_checkpoint(path)) by_name.emplace(name, std::move(t));
  return load_param_into_net(net, by_name, strict);
}

}  // namespace spore::ms
