// The Spore model IR (NOTE [Model IR] in docs/design.md): one file holding a graph of registry
// ops, its parameters, its input and output signatures and metadata. Part of the format library
// (core only): the framework writes it from a traced graph, Lite reads it without the framework.
//
// File layout (little-endian):
//   [0, 8)    magic "SPOREIR\0"
//   [8, 12)   IR version (u32), read before anything else (NOTE [IR versions])
//   [12, 16)  flags, 0
//   [16, 24)  header bytes H (u64): a FlatBuffer of schemas/ir/spore_ir.fbs ("SPIR")
//   [24, 32)  data offset D (u64), a multiple of 64, >= 48 + H
//   [32, 40)  data bytes N (u64); every tensor in it starts at a multiple of 64
//   [40, 48)  reserved, 0
//   [48, 48 + H)  the header;  [D, D + N)  the data;  [D + N, D + N + 32)  SHA-256 of [0, D + N)
// A reader maps the file and views tensors in place (no copy); the checksum covers every byte
// before it, so a flipped bit anywhere is a kFormat error, not a wrong answer.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "spore/op_registry.h"
#include "spore/tensor.h"

namespace spore::ir {

// NOTE [IR versions]
//   1: static shapes; dtypes bool, int8, uint8, int32, int64, float16, float32, float64; no subgraphs.
//   2: adds symbolic dimensions (a named batch or sequence extent), bfloat16 tensors, and
//      subgraphs (cond / while_loop).
// The writer writes kNewestVersion unless asked for an older one, and refuses (kVersion, naming the
// feature and the value) a graph that the requested version cannot hold.
inline constexpr uint32_t kOldestVersion = 1;
inline constexpr uint32_t kNewestVersion = 2;
inline constexpr char kMagic[8] = {'S', 'P', 'O', 'R', 'E', 'I', 'R', '\0'};
inline constexpr uint64_t kDataAlignment = 64;

enum class ValueKind : uint8_t { kInput, kParameter, kConstant, kNode };
const char* value_kind_name(ValueKind k);

// A dimension: fixed (symbol empty, extent >= 0) or symbolic (extent -1, symbol named).
struct Dim {
  int64_t extent = 0;
  std::string symbol;
  bool symbolic() const { return !symbol.empty(); }
};

struct Value {
  std::string name;
  ValueKind kind = ValueKind::kNode;
  DType dtype = DType::kFloat32;
  std::vector<Dim> dims;
  Tensor data;  // kParameter / kConstant: the bytes (a view into the mapped file when read)
  bool has_symbolic_dims() const;
  Shape fixed_shape() const;  // kValue when a dimension is symbolic
};

struct Graph;
struct Node {
  const OpDef* def = nullptr;
  Attrs attrs;
  std::vector<uint32_t> inputs, outputs;
  std::vector<Graph> subgraphs;
};

struct Graph {
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<uint32_t> inputs, outputs;
};

// An output whose extent along `axis` only the run knows (an ONNX Slice that ends at a Loop's step
// count): planned at its largest extent, and narrowed by Lite after the run to the int64 length
// the graph returns as output `length` (hidden: such outputs come after the model's own).
// NOTE [Ragged outputs]: in memory only (an ONNX mapping); the IR writer refuses a model with one.
struct RaggedOutput {
  uint32_t output = 0;
  int axis = 0;
  uint32_t length = 0;
};

struct Model {
  uint32_t ir_version = kNewestVersion;
  std::string producer_name = "spore", producer_version;
  uint32_t opset_version = kOpSetVersion;
  Graph graph;
  std::vector<RaggedOutput> ragged;
  std::vector<std::pair<std::string, std::string>> metadata;
  std::string sha256;  // set by read_model: the file's checksum (hex)
};

// The first IR version that can hold everything in `model`, and the reason it needs that version
// ("value 'x' has the symbolic dimension 'batch'"; empty for version 1).
std::pair<uint32_t, std::string> required_version(const Model& model);

struct WriteOptions {
  uint32_t version = kNewestVersion;
};
// Writes `model` atomically at `options.version`; kVersion naming the feature when that version
// cannot hold the graph, kValue for a graph that breaks the invariants the reader checks.
void write_model(const std::filesystem::path& path, const Model& model, const WriteOptions& options = {});
std::vector<uint8_t> model_to_bytes(const Model& model, const WriteOptions& options = {});

// What a reader needs to decide before parsing: the file's IR version, and whether this build
// reads it. Reads only the first 16 bytes; kFormat when the magic is wrong or the file is short.
uint32_t peek_version(const std::filesystem::path& path);

// Reads and validates a whole file: version first (kVersion: the file's version, the versions
// this reader reads, and the two ways out), then sizes, the checksum, the FlatBuffer (verified),
// op names and attributes against the registry, value ids, shapes and data ranges, and the
// order of nodes. Tensor data are views into the mapped file. Never crashes on any input.
Model read_model(const std::filesystem::path& path);
// The same over bytes in memory (fuzzing, tests); tensor data are views that keep a copy alive.
Model read_model_bytes(std::span<const uint8_t> bytes, const std::string& label = "<memory>");

// Rewrites `in` at `version` (down-level where the graph allows, otherwise kVersion naming the
// feature that needs the newer version).
void convert_model(const std::filesystem::path& in, const std::filesystem::path& out, uint32_t version);

}  // namespace spore::ir
