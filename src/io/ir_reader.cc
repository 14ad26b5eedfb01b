// Reads the model IR (NOTE [Model IR]): version first, then sizes, checksum, the verified
// FlatBuffer, and the graph's invariants; tensors are views into the mapped file.
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

// The FlatBuffer verifier's bounds: generous for real models, small enough that a hostile header
// cannot make verification itself expensive.
constexpr flatbuffers::uoffset_t kMaxTables = 10'000'000;
constexpr flatbuffers::uoffset_t kMaxDepth = 128;

// FlatBuffers 2.0.8's verifier checks a vector's length prefix for alignment but not its 8-byte
// elements, so a hostile file can place int64 elements at a 4-byte boundary (found by fuzz_ir):
// they are copied out bytewise, never loaded in place.
std::vector<int64_t> int64s(const flatbuffers::Vector<int64_t>* v) {
  std::vector<int64_t> out(v ? v->size() : 0);
  if (!out.empty()) std::memcpy(out.data(), v->Data(), out.size() * sizeof(int64_t));
  return out;
}

struct Reader {
  const std::string& label;
  const Tensor& file;  // the whole file as a 1-D uint8 tensor (mapped or copied)
  uint64_t data_offset = 0, data_bytes = 0;

  [[noreturn]] void fail(const std::string& what) const { throw Error(ErrorCode::kFormat, label + ": " + what); }

  DType dtype(const flatbuffers::String* name, const std::string& where) const {
    if (name)
      for (DType t : kAllDTypes)
        if (name->string_view() == dtype_name(t)) return t;
    fail(where + ": unknown dtype '" + (name ? name->str() : std::string()) + "'");
  }

  Value value(const fb::Value& v, size_t id) const {
    const std::string where = "value " + std::to_string(id);
    Value out;
    if (v.name()) out.name = v.name()->str();
    if ((int)v.kind() < 0 || v.kind() > fb::ValueKind::Node) fail(where + ": unknown value kind " + std::to_string((int)v.kind()));
    out.kind = (ValueKind)v.kind();
    out.dtype = dtype(v.dtype(), where);
    const auto* dims = v.dims();
    const auto* symbols = v.symbols();
    const size_t rank = dims ? dims->size() : 0;
    if (rank > (size_t)kMaxDims) fail(where + " has " + std::to_string(rank) + " dimensions (at most " + std::to_string(kMaxDims) + ")");
    if (symbols && symbols->size() != rank) fail(where + ": " + std::to_string(symbols->size()) + " symbols for " + std::to_string(rank) + " dimensions");
    const std::vector<int64_t> extents = int64s(dims);
    for (size_t d = 0; d < rank; ++d) {
      Dim dim{extents[d], {}};
      if (symbols && symbols->Get((flatbuffers::uoffset_t)d)) dim.symbol = symbols->Get((flatbuffers::uoffset_t)d)->str();
      out.dims.push_back(std::move(dim));
    }
    if (v.data()) {
      if (out.kind != ValueKind::kParameter && out.kind != ValueKind::kConstant)
        fail(where + " is a " + value_kind_name(out.kind) + " but carries data");
      for (const Dim& d : out.dims)
        if (d.symbolic() || d.extent < 0) fail(where + " holds data but its shape is not fixed");
      Shape shape;
      try {
        shape = out.fixed_shape();
        (void)shape.numel();
      } catch (const Error&) {
        fail(where + ": its shape overflows");
      }
      const uint64_t off = v.data()->offset(), bytes = v.data()->bytes();
      uint64_t want = 0;
      if (__builtin_mul_overflow((uint64_t)shape.numel(), (uint64_t)dtype_size(out.dtype), &want) || want != bytes)
        fail(where + ": " + std::to_string(bytes) + " data bytes for a " + dtype_name(out.dtype) + " " + shape.str());
      if (off % kDataAlignment != 0) fail(where + ": data offset " + std::to_string(off) + " is not 64-byte aligned");
      if (off > data_bytes || bytes > data_bytes - off)
        fail(where + ": data [" + std::to_string(off) + ", +" + std::to_string(bytes) + ") lie outside the " +
             std::to_string(data_bytes) + "-byte data section");
      out.data = view_bytes(file, data_offset + off, shape, out.dtype);
      if (out.dtype == DType::kBool) {
        const uint8_t* p = (const uint8_t*)out.data.data_ptr();
        for (uint64_t i = 0; i < bytes; ++i)
          if (p[i] > 1) fail(where + ": bool element " + std::to_string(i) + " is byte " + std::to_string(p[i]) + ", not 0 or 1");
      }
    }
    return out;
  }

  AttrValue attr(const fb::Attr& a, const AttrSpec& spec, const std::string& where) const {
    if (a.name()->string_view() != spec.name)
      fail(where + ": attribute '" + a.name()->str() + "' where the op's schema has '" + spec.name + "'");
    if ((int)a.kind() != (int)spec.kind)
      fail(where + ": attribute '" + spec.name + "' is not a " + attr_kind_name(spec.kind));
    switch (spec.kind) {
      case AttrKind::kInt: return a.i();
      case AttrKind::kFloat: return a.f();
      case AttrKind::kBool: return a.b();
      case AttrKind::kDType: return dtype(a.dtype(), where + " attribute '" + spec.name + "'");
      case AttrKind::kInts: return int64s(a.ints());
      case AttrKind::kString: return a.s() ? a.s()->str() : std::string();
    }
    fail(where + ": bad attribute kind");
  }

  static AttrValue zero_attr(AttrKind kind) {
    switch (kind) {
      case AttrKind::kInt: return int64_t{0};
      case AttrKind::kFloat: return 0.0;
      case AttrKind::kBool: return false;
      case AttrKind::kDType: return DType::kFloat32;
      case AttrKind::kInts: return std::vector<int64_t>{};
      case AttrKind::kString: return std::string();
    }
    return int64_t{0};
  }

  static std::vector<uint32_t> ids(const flatbuffers::Vector<uint32_t>* v) {
    return v ? std::vector<uint32_t>(v->begin(), v->end()) : std::vector<uint32_t>{};
  }

  Graph graph(const fb::Graph& g, int depth) const {
    if (depth > kMaxSubgraphDepth) fail("subgraphs nest deeper than " + std::to_string(kMaxSubgraphDepth));
    Graph out;
    if (g.values())
      for (flatbuffers::uoffset_t i = 0; i < g.values()->size(); ++i) out.values.push_back(value(*g.values()->Get(i), i));
    if (g.nodes())
      for (flatbuffers::uoffset_t i = 0; i < g.nodes()->size(); ++i) {
        const fb::Node& n = *g.nodes()->Get(i);
        const std::string where = "node " + std::to_string(i) + " ('" + n.op()->str() + "')";
        Node node;
        node.def = find_op(n.op()->string_view());
        if (!node.def)
          fail(where + ": unknown op; this build's op set (version " + std::to_string(kOpSetVersion) +
               ") has no op of that name");
        const size_t nattrs = n.attrs() ? n.attrs()->size() : 0, nspec = node.def->attrs.size();
        // Trailing optional attributes (added to the op later) may be missing: a file written
        // before them reads with their zero value, the op's former behaviour.
        size_t required = nspec;
        while (required > 0 && node.def->attrs[required - 1].optional) --required;
        if (nattrs < required || nattrs > nspec)
          fail(where + " has " + std::to_string(nattrs) + " attributes; the op's schema has " + std::to_string(nspec) +
               (required < nspec ? " (the last " + std::to_string(nspec - required) + " optional)" : std::string()));
        std::vector<AttrValue> attrs;
        for (size_t a = 0; a < nattrs; ++a) attrs.push_back(attr(*n.attrs()->Get((flatbuffers::uoffset_t)a), node.def->attrs[a], where));
        for (size_t a = nattrs; a < nspec; ++a) attrs.push_back(zero_attr(node.def->attrs[a].kind));
        node.attrs = Attrs::from(attrs);
        node.inputs = ids(n.inputs());
        node.outputs = ids(n.outputs());
        if (n.subgraphs())
          for (const fb::Graph* s : *n.subgraphs()) node.subgraphs.push_back(graph(*s, depth + 1));
        out.nodes.push_back(std::move(node));
      }
    out.inputs = ids(g.inputs());
    out.outputs = ids(g.outputs());
    return out;
  }
};

uint32_t get_u32(const uint8_t* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
uint64_t get_u64(const uint8_t* p) { uint64_t v; std::memcpy(&v, p, 8); return v; }

[[noreturn]] void version_error(const std::string& label, uint32_t version) {
  throw Error(ErrorCode::kVersion,
              label + ": IR version " + std::to_string(version) + "; this reader reads versions " +
                  std::to_string(kOldestVersion) + " to " + std::to_string(kNewestVersion) +
                  ". Either write the file at a version it reads (export with --ir-version " +
                  std::to_string(kNewestVersion) + ", or `spore ir convert FILE --to-version " +
                  std::to_string(kNewestVersion) + "`), or use a Spore build that reads version " +
                  std::to_string(version));
}

uint32_t check_prefix(const uint8_t* p, size_t size, const std::string& label) {
  if (size < 16 || std::memcmp(p, kMagic, 8) != 0)
    throw Error(ErrorCode::kFormat, label + ": not a Spore IR file (no \"SPOREIR\" magic at the start)");
  const uint32_t version = get_u32(p + 8);
  if (version < kOldestVersion || version > kNewestVersion) version_error(label, version);
  return version;
}

Model parse(const Tensor& file, const std::string& label) {
  const uint8_t* p = (const uint8_t*)file.data_ptr();
  const uint64_t size = (uint64_t)file.numel();
  const uint32_t version = check_prefix(p, size, label);  // the version check comes first
  Reader r{label, file};
  if (size < 48 + 32) r.fail("truncated: " + std::to_string(size) + " bytes");
  const uint64_t header = get_u64(p + 16);
  r.data_offset = get_u64(p + 24);
  r.data_bytes = get_u64(p + 32);
  if (get_u32(p + 12) != 0) r.fail("unknown flags " + std::to_string(get_u32(p + 12)));
  if (header > size - 48 || r.data_offset < 48 + header || r.data_offset % kDataAlignment != 0 ||
      r.data_offset > size || r.data_bytes > size - r.data_offset || size - r.data_offset - r.data_bytes != 32)
    r.fail("the header (" + std::to_string(header) + " bytes) and data section (" + std::to_string(r.data_bytes) +
           " bytes at " + std::to_string(r.data_offset) + ") do not fit the file's " + std::to_string(size) + " bytes");
  Sha256 sha;
  sha.update(p, r.data_offset + r.data_bytes);
  const std::string hex = sha.hex_digest();
  const uint8_t* stored = p + r.data_offset + r.data_bytes;
  static const char* kHex = "0123456789abcdef";
  std::string stored_hex;
  for (int i = 0; i < 32; ++i) stored_hex += {kHex[stored[i] >> 4], kHex[stored[i] & 15]};
  if (stored_hex != hex) r.fail("checksum mismatch (SHA-256 " + hex + ", file says " + stored_hex + "): the file is corrupt");
  flatbuffers::Verifier verifier(p + 48, header, kMaxDepth, kMaxTables);
  if (!fb::VerifyModelBuffer(verifier)) r.fail("the header is not a valid IR FlatBuffer");
  const fb::Model& m = *fb::GetModel(p + 48);
  if (m.ir_version() != version)
    r.fail("the header says IR version " + std::to_string(m.ir_version()) + ", the prefix " + std::to_string(version));
  Model out;
  out.ir_version = version;
  out.producer_name = m.producer_name() ? m.producer_name()->str() : "";
  out.producer_version = m.producer_version() ? m.producer_version()->str() : "";
  out.opset_version = m.opset_version();
  out.graph = r.graph(*m.graph(), 0);
  if (m.metadata())
    for (const fb::KeyValue* kv : *m.metadata()) out.metadata.emplace_back(kv->key()->str(), kv->value() ? kv->value()->str() : "");
  out.sha256 = hex;
  check_graph(out.graph, label);
  const auto [need, why] = required_version(out);
  if (need > version) r.fail("the file says IR version " + std::to_string(version) + " but " + why + " (version " + std::to_string(need) + ")");
  return out;
}

}  // namespace

uint32_t peek_version(const std::filesystem::path& path) {
  const Tensor file = map_file(path);
  const uint8_t* p = (const uint8_t*)file.data_ptr();
  const size_t size = (size_t)file.numel();
  if (size < 16 || std::memcmp(p, kMagic, 8) != 0)
    throw Error(ErrorCode::kFormat, path.string() + ": not a Spore IR file (no \"SPOREIR\" magic at the start)");
  return get_u32(p + 8);
}

Model read_model(const std::filesystem::path& path) { return parse(map_file(path), path.string()); }

Model read_model_bytes(std::span<const uint8_t> bytes, const std::string& label) {
  const Tensor copy = Tensor::from_bytes(bytes.data(), Shape{(int64_t)bytes.size()}, DType::kUInt8, Device::cpu());
  return parse(copy, label);
}

void convert_model(const std::filesystem::path& in, const std::filesystem::path& out, uint32_t version) {
  write_model(out, read_model(in), WriteOptions{version});
}

}  // namespace spore::ir
