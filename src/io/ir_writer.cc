// Writes the model IR (NOTE [Model IR]): the FlatBuffer header, the 64-byte-aligned data section,
// and the trailing SHA-256, through one atomic write.
#include <cstring>
#include <string>

#include "io/ir_checks.h"
#include "spore/error.h"
#include "spore/format.h"
#include "spore/ir.h"
#include "spore_ir_generated.h"

namespace spore::ir {
namespace {

namespace fb = spore::ir::fb;
using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

uint64_t align_up(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

// Tensor bytes in data-section order, each at a 64-byte boundary.
struct DataSection {
  std::vector<std::vector<uint8_t>> chunks;
  std::vector<uint64_t> offsets;
  uint64_t size = 0;
  fb::TensorData add(const Tensor& t) {
    const uint64_t at = align_up(size, kDataAlignment);
    chunks.push_back(t.to_bytes());
    offsets.push_back(at);
    size = at + chunks.back().size();
    return fb::TensorData(at, chunks.back().size());
  }
};

Offset<fb::Attr> write_attr(FlatBufferBuilder& b, const AttrSpec& spec, const AttrValue& v) {
  auto name = b.CreateString(spec.name);
  Offset<flatbuffers::String> dtype, s;
  Offset<flatbuffers::Vector<int64_t>> ints;
  if (spec.kind == AttrKind::kDType) dtype = b.CreateString(dtype_name(std::get<DType>(v)));
  if (spec.kind == AttrKind::kString) s = b.CreateString(std::get<std::string>(v));
  if (spec.kind == AttrKind::kInts) ints = b.CreateVector(std::get<std::vector<int64_t>>(v));
  fb::AttrBuilder a(b);
  a.add_name(name);
  a.add_kind((fb::AttrKind)spec.kind);
  switch (spec.kind) {
    case AttrKind::kInt: a.add_i(std::get<int64_t>(v)); break;
    case AttrKind::kFloat: a.add_f(std::get<double>(v)); break;
    case AttrKind::kBool: a.add_b(std::get<bool>(v)); break;
    case AttrKind::kDType: a.add_dtype(dtype); break;
    case AttrKind::kInts: a.add_ints(ints); break;
    case AttrKind::kString: a.add_s(s); break;
  }
  return a.Finish();
}

Offset<fb::Graph> write_graph(FlatBufferBuilder& b, const Graph& g, DataSection& data, uint32_t version) {
  std::vector<Offset<fb::Value>> values;
  for (const Value& v : g.values) {
    std::vector<int64_t> dims;
    std::vector<Offset<flatbuffers::String>> symbols;
    for (const Dim& d : v.dims) {
      dims.push_back(d.symbolic() ? -1 : d.extent);
      if (version >= 2) symbols.push_back(b.CreateString(d.symbol));
    }
    auto name = b.CreateString(v.name);
    auto dtype = b.CreateString(dtype_name(v.dtype));
    auto dims_fb = b.CreateVector(dims);
    auto symbols_fb = v.has_symbolic_dims() ? b.CreateVector(symbols) : 0;
    fb::TensorData td;
    const bool holds_data = v.kind == ValueKind::kParameter || v.kind == ValueKind::kConstant;
    if (holds_data) td = data.add(v.data);
    fb::ValueBuilder vb(b);
    vb.add_name(name);
    vb.add_kind((fb::ValueKind)v.kind);
    vb.add_dtype(dtype);
    vb.add_dims(dims_fb);
    if (!symbols_fb.IsNull()) vb.add_symbols(symbols_fb);
    if (holds_data) vb.add_data(&td);
    values.push_back(vb.Finish());
  }
  std::vector<Offset<fb::Node>> nodes;
  for (const Node& n : g.nodes) {
    std::vector<Offset<fb::Attr>> attrs;
    for (int a = 0; a < n.attrs.size(); ++a) attrs.push_back(write_attr(b, n.def->attrs[a], n.attrs[a]));
    std::vector<Offset<fb::Graph>> subgraphs;
    for (const Graph& s : n.subgraphs) subgraphs.push_back(write_graph(b, s, data, version));
    nodes.push_back(fb::CreateNode(b, b.CreateString(n.def->name), b.CreateVector(attrs), b.CreateVector(n.inputs),
                                   b.CreateVector(n.outputs), subgraphs.empty() ? 0 : b.CreateVector(subgraphs)));
  }
  return fb::CreateGraph(b, b.CreateVector(values), b.CreateVector(nodes), b.CreateVector(g.inputs),
                         b.CreateVector(g.outputs));
}

void put_u32(std::vector<uint8_t>& out, size_t at, uint32_t v) { std::memcpy(out.data() + at, &v, 4); }
void put_u64(std::vector<uint8_t>& out, size_t at, uint64_t v) { std::memcpy(out.data() + at, &v, 8); }

}  // namespace

std::vector<uint8_t> model_to_bytes(const Model& model, const WriteOptions& options) {
  if (!model.ragged.empty())  // NOTE [Ragged outputs]
    throw Error(ErrorCode::kUnsupported, "the model has an output whose extent only the run knows (" +
                                             std::to_string(model.ragged.size()) +
                                             "); Spore IR cannot hold it: run the ONNX file in Lite instead");
  if (options.version < kOldestVersion || options.version > kNewestVersion)
    throw Error(ErrorCode::kVersion, "IR version " + std::to_string(options.version) + " does not exist; this writer writes " +
                                         std::to_string(kOldestVersion) + " to " + std::to_string(kNewestVersion));
  try {
    check_graph(model.graph, "the graph to write");
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kFormat) throw;
    throw Error(ErrorCode::kValue, std::string("cannot write the IR: ") + e.what());
  }
  const auto [need, why] = required_version(model);
  if (need > options.version)
    throw Error(ErrorCode::kVersion, "IR version " + std::to_string(options.version) + " cannot hold this graph: " + why +
                                         " (needs version " + std::to_string(need) + "); write version " +
                                         std::to_string(need) + " or newer, or remove that feature");
  FlatBufferBuilder b(1 << 16);
  DataSection data;
  auto graph = write_graph(b, model.graph, data, options.version);
  std::vector<Offset<fb::KeyValue>> meta;
  for (const auto& [k, v] : model.metadata) meta.push_back(fb::CreateKeyValue(b, b.CreateString(k), b.CreateString(v)));
  auto producer = b.CreateString(model.producer_name);
  auto producer_version = b.CreateString(model.producer_version);
  auto meta_fb = b.CreateVector(meta);
  fb::ModelBuilder mb(b);
  mb.add_ir_version(options.version);
  mb.add_producer_name(producer);
  mb.add_producer_version(producer_version);
  mb.add_opset_version(model.opset_version);
  mb.add_graph(graph);
  mb.add_metadata(meta_fb);
  fb::FinishModelBuffer(b, mb.Finish());

  const uint64_t header = b.GetSize();
  const uint64_t data_offset = align_up(48 + header, kDataAlignment);
  std::vector<uint8_t> out(data_offset + data.size + 32, 0);
  std::memcpy(out.data(), kMagic, 8);
  put_u32(out, 8, options.version);
  put_u32(out, 12, 0);
  put_u64(out, 16, header);
  put_u64(out, 24, data_offset);
  put_u64(out, 32, data.size);
  std::memcpy(out.data() + 48, b.GetBufferPointer(), header);
  for (size_t i = 0; i < data.chunks.size(); ++i)
    std::memcpy(out.data() + data_offset + data.offsets[i], data.chunks[i].data(), data.chunks[i].size());
  Sha256 sha;
  sha.update(out.data(), data_offset + data.size);
  const std::string hex = sha.hex_digest();
  for (int i = 0; i < 32; ++i) out[data_offset + data.size + i] = (uint8_t)std::stoi(hex.substr(2 * i, 2), nullptr, 16);
  return out;
}

void write_model(const std::filesystem::path& path, const Model& model, const WriteOptions& options) {
  const std::vector<uint8_t> bytes = model_to_bytes(model, options);
  atomic_write_file(path, bytes);
}

}  // namespace spore::ir
