// The model IR: round trips at every version and for every registry op, down-level writes and
// their refusal, the version message, and hostile files (NOTE [Model IR], [IR versions]).
#include "spore/ir.h"

#include <gtest/gtest.h>

#include <cstring>

#include "io_test_util.h"
#include "ir_test_models.h"
#include "probe/op_matrix_factories.h"
#include "spore/format.h"
#include "spore/ops.h"

namespace spore::test {
namespace {

using ir::Dim;
using ir::ValueKind;

ir::Model dense_relu(bool symbolic) { return dense_relu_model(symbolic); }
ir::Value param(std::string name, const Tensor& data) { return ir_param(std::move(name), data); }
ir::Value node_value(DType t, std::vector<Dim> dims) { return ir_node_value(t, std::move(dims)); }

std::vector<uint8_t> reseal(std::vector<uint8_t> bytes) {  // recompute the trailing SHA-256
  const size_t body = bytes.size() - 32;
  std::string hex = sha256_bytes(std::span<const uint8_t>(bytes.data(), body));
  for (int i = 0; i < 32; ++i) bytes[body + i] = (uint8_t)std::stoi(hex.substr(2 * i, 2), nullptr, 16);
  return bytes;
}

TEST(ModelIr, RoundTripsAtEveryVersionWithDataMappedInPlace) {
  TempDir dir;
  for (uint32_t version : {1u, 2u}) {
    const ir::Model m = dense_relu(/*symbolic=*/version >= 2);
    const auto path = dir / ("dense_v" + std::to_string(version) + ".spore");
    ir::write_model(path, m, {version});
    EXPECT_EQ(ir::peek_version(path), version);
    const ir::Model r = ir::read_model(path);
    EXPECT_EQ(r.ir_version, version);
    EXPECT_EQ(r.producer_name, "spore");
    EXPECT_EQ(r.opset_version, (uint32_t)kOpSetVersion);
    EXPECT_EQ(r.sha256.size(), 64u);
    EXPECT_EQ(r.metadata, m.metadata);
    ASSERT_EQ(r.graph.nodes.size(), 3u);
    EXPECT_EQ(r.graph.nodes[0].def->id, OpId::k_matmul);
    EXPECT_EQ(r.graph.values[0].dims[0].symbol, version >= 2 ? "batch" : "");
    const Tensor w = r.graph.values[1].data;
    EXPECT_EQ(w.to_vector<float>(), m.graph.values[1].data.to_vector<float>());
    EXPECT_EQ((uintptr_t)w.data_ptr() % ir::kDataAlignment, 0u);  // a view of the mapping
    EXPECT_FALSE(w.storage()->writable());
  }
}

TEST(ModelIr, TheChecksumIsTheSha256OfEverythingBeforeIt) {
  TempDir dir;
  const auto bytes = ir::model_to_bytes(dense_relu(false));
  const std::string body = sha256_bytes(std::span<const uint8_t>(bytes.data(), bytes.size() - 32));
  const ir::Model r = ir::read_model_bytes(bytes);
  EXPECT_EQ(r.sha256, body);
}

TEST(ModelIr, DownLevelWritesWhatVersionOneHoldsAndRefusesTheRest) {
  const ir::Model plain = dense_relu(false);
  EXPECT_EQ(ir::required_version(plain).first, 1u);
  EXPECT_NO_THROW(ir::model_to_bytes(plain, {1}));
  const ir::Model symbolic = dense_relu(true);
  EXPECT_EQ(ir::required_version(symbolic).first, 2u);
  expect_error([&] { ir::model_to_bytes(symbolic, {1}); }, ErrorCode::kVersion, "IR version 1 cannot hold",
               "value 0 ('x') has the symbolic dimension 'batch'", "write version 2");
  ir::Model bf16 = dense_relu(false);
  bf16.graph.values[2] = param("b", full({4}, 0.5, DType::kBFloat16));
  expect_error([&] { ir::model_to_bytes(bf16, {1}); }, ErrorCode::kVersion, "'b') is bfloat16");
  expect_error([&] { ir::model_to_bytes(plain, {7}); }, ErrorCode::kVersion, "does not exist");
}

TEST(ModelIr, ConvertRewritesDownLevel) {
  TempDir dir;
  ir::write_model(dir / "v2.spore", dense_relu(false));
  EXPECT_EQ(ir::peek_version(dir / "v2.spore"), 2u);
  ir::convert_model(dir / "v2.spore", dir / "v1.spore", 1);
  EXPECT_EQ(ir::read_model(dir / "v1.spore").ir_version, 1u);
  ir::write_model(dir / "sym.spore", dense_relu(true));
  expect_error([&] { ir::convert_model(dir / "sym.spore", dir / "x.spore", 1); }, ErrorCode::kVersion, "symbolic dimension");
}

TEST(ModelIr, ATooNewFileIsRefusedFirstWithTheWaysOut) {
  auto bytes = ir::model_to_bytes(dense_relu(false));
  const uint32_t future = ir::kNewestVersion + 1;
  std::memcpy(bytes.data() + 8, &future, 4);
  expect_error([&] { ir::read_model_bytes(bytes, "future.spore"); }, ErrorCode::kVersion,
               "future.spore: IR version " + std::to_string(future), "this reader reads versions 1 to 2",
               "spore ir convert FILE --to-version 2", "--ir-version 2", "a Spore build that reads version");
}

TEST(ModelIr, HostileFilesGetTypedErrors) {
  const auto good = ir::model_to_bytes(dense_relu(false));
  auto read = [](std::vector<uint8_t> b) { ir::read_model_bytes(b, "bad.spore"); };
  expect_error([&] { read({}); }, ErrorCode::kFormat, "not a Spore IR file");
  auto magic = good;
  magic[0] = 'X';
  expect_error([&] { read(magic); }, ErrorCode::kFormat, "no \"SPOREIR\" magic");
  auto flipped = good;
  flipped[60] ^= 1;
  expect_error([&] { read(flipped); }, ErrorCode::kFormat, "checksum mismatch");
  for (size_t cut : {size_t{20}, size_t{60}, good.size() / 2, good.size() - 1})
    expect_error([&] { read(std::vector<uint8_t>(good.begin(), good.begin() + cut)); }, ErrorCode::kFormat, "bad.spore");
  auto header = good;  // header length past the end, sealed so that the size check is what fails
  const uint64_t huge = ~uint64_t{0} - 8;
  std::memcpy(header.data() + 16, &huge, 8);
  expect_error([&] { read(reseal(header)); }, ErrorCode::kFormat, "do not fit the file");
  auto garbage = good;  // a sealed file whose FlatBuffer is noise
  for (size_t i = 48; i < 48 + 64; ++i) garbage[i] = (uint8_t)(i * 37);
  expect_error([&] { read(reseal(garbage)); }, ErrorCode::kFormat, "not a valid IR FlatBuffer");
  // An op this build does not have, in an otherwise valid, sealed file.
  auto unknown = good;
  const std::string relu = "relu";
  auto it = std::search(unknown.begin() + 48, unknown.end(), relu.begin(), relu.end());
  ASSERT_NE(it, unknown.end());
  it[3] = 'x';
  expect_error([&] { read(reseal(unknown)); }, ErrorCode::kFormat, "'relx'", "unknown op");
}

TEST(ModelIr, TheWriterRefusesABrokenGraph) {
  ir::Model m = dense_relu(false);
  m.graph.nodes[1].inputs = {3, 9};  // dangling
  expect_error([&] { ir::model_to_bytes(m); }, ErrorCode::kValue, "reads value 9, which does not exist");
  m = dense_relu(false);
  std::swap(m.graph.nodes[0], m.graph.nodes[1]);  // a use before its producer
  expect_error([&] { ir::model_to_bytes(m); }, ErrorCode::kValue, "before a node makes it");
  m = dense_relu(false);
  m.graph.nodes[2].attrs = Attrs{int64_t{1}};
  expect_error([&] { ir::model_to_bytes(m); }, ErrorCode::kValue, "has 1 attributes; the op's schema has 0");
  m = dense_relu(false);
  m.graph.values[1].data = full({2}, 1.0);
  expect_error([&] { ir::model_to_bytes(m); }, ErrorCode::kValue, "('w'): its data do not match");
}

// Files written by earlier builds stay readable: the committed fixtures (one per IR version, also
// the fuzz target's seeds) must read back as the graph that wrote them. SPORE_REGENERATE_FIXTURES=1
// rewrites them (only when the format changes on purpose: old files must keep reading).
TEST(ModelIr, CommittedFilesOfEveryVersionStillRead) {
  const std::filesystem::path dir = std::filesystem::path(SPORE_SOURCE_DIR) / "tests/fixtures/ir";
  for (uint32_t version : {1u, 2u}) {
    const auto path = dir / ("dense_relu_v" + std::to_string(version) + ".spore");
    const ir::Model want = dense_relu(version >= 2);
    if (std::getenv("SPORE_REGENERATE_FIXTURES")) ir::write_model(path, want, {version});
    const ir::Model got = ir::read_model(path);
    EXPECT_EQ(got.ir_version, version);
    ASSERT_EQ(got.graph.values.size(), want.graph.values.size());
    for (size_t i = 0; i < want.graph.values.size(); ++i) {
      EXPECT_EQ(got.graph.values[i].name, want.graph.values[i].name);
      EXPECT_EQ(got.graph.values[i].dims.size(), want.graph.values[i].dims.size());
      if (want.graph.values[i].data.defined()) {
        EXPECT_EQ(got.graph.values[i].data.to_bytes(), want.graph.values[i].data.to_bytes());
      }
    }
    ASSERT_EQ(got.graph.nodes.size(), want.graph.nodes.size());
    for (size_t n = 0; n < want.graph.nodes.size(); ++n) EXPECT_EQ(got.graph.nodes[n].def, want.graph.nodes[n].def);
  }
}

// Records the first op a sample dispatches, with its real attributes.
class FirstOp : public DispatchObserver {
 public:
  void on_op(const OpDef& def, std::span<const Tensor> inputs, const Attrs& attrs, std::span<const Tensor> outputs) override {
    if (seen) return;
    seen = true;
    this->def = &def;
    this->inputs.assign(inputs.begin(), inputs.end());
    this->attrs = attrs;
    this->outputs.assign(outputs.begin(), outputs.end());
  }
  bool seen = false;
  const OpDef* def = nullptr;
  std::vector<Tensor> inputs, outputs;
  Attrs attrs;
};

// Every registry op, with the attributes its sample uses, survives a write and a read: the IR
// serialises ops and attributes from the registry's schema, so no op can be missing from it.
TEST(ModelIr, EveryRegistryOpRoundTrips) {
  int covered = 0;
  std::vector<std::string> skipped;
  for (const OpDef& def : all_ops()) {
    if (def.num_subgraphs) continue;  // while_loop: its round trip is in tests/graph/while_loop_test.cc
    const probe::OpFactory* factory = probe::op_factory(def.id);
    ASSERT_NE(factory, nullptr) << def.name;
    FirstOp rec;  // the first dtype whose sample reaches the op itself (cast to the same dtype does not)
    for (DType t : {DType::kFloat32, DType::kFloat16, DType::kInt64, DType::kInt32}) {  // int32: integer_matmul
      std::optional<probe::OpCase> c = (*factory)(t);
      if (!c) continue;
      rec = FirstOp();
      DispatchObserverGuard guard(&rec);
      c->run(c->inputs, false);
      if (rec.seen && rec.def->id == def.id) break;
    }
    if (!rec.seen || rec.def->id != def.id) {
      skipped.push_back(def.name);
      continue;
    }
    ir::Model m;
    for (const Tensor& t : rec.inputs) m.graph.values.push_back(param("", t.contiguous()));
    ir::Node n{rec.def, rec.attrs, {}, {}, {}};
    for (size_t i = 0; i < rec.inputs.size(); ++i) n.inputs.push_back((uint32_t)i);
    for (const Tensor& t : rec.outputs) {
      std::vector<Dim> dims;
      for (int64_t e : t.shape()) dims.push_back({e, {}});
      n.outputs.push_back((uint32_t)m.graph.values.size());
      m.graph.values.push_back(node_value(t.dtype(), dims));
    }
    if (n.outputs.empty()) continue;  // in-place updates: no output values to name
    m.graph.outputs = n.outputs;
    m.graph.nodes.push_back(n);
    const ir::Model r = ir::read_model_bytes(ir::model_to_bytes(m, {ir::required_version(m).first}), def.name);
    ASSERT_EQ(r.graph.nodes.size(), 1u);
    EXPECT_EQ(r.graph.nodes[0].def, &def);
    ASSERT_EQ(r.graph.nodes[0].attrs.size(), rec.attrs.size()) << def.name;
    for (int a = 0; a < rec.attrs.size(); ++a) EXPECT_EQ(r.graph.nodes[0].attrs[a], rec.attrs[a]) << def.name << " attr " << a;
    for (size_t i = 0; i < rec.inputs.size(); ++i)
      EXPECT_EQ(r.graph.values[i].data.to_bytes(), rec.inputs[i].to_bytes()) << def.name << " input " << i;
    ++covered;
  }
  std::string names;
  for (const auto& s : skipped) names += s + " ";
  EXPECT_EQ(names, "") << "ops whose samples never reach them";
}

}  // namespace
}  // namespace spore::test
