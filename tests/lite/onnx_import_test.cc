// ONNX in (NOTE [ONNX]): hostile and unsupported files get typed errors naming the node and the
// fix; symbolic dimensions stay symbolic; mapped graphs run in Lite against the framework's ops.
// (The mapping's numbers are checked against ONNX's own reference outputs by the node-test
// subset, ctest lite.onnx_node_subset.)
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <fstream>

#include "../io/io_test_util.h"
#include "spore/lite.h"
#include "spore/onnx.h"
#include "spore/ops.h"

namespace spore::test {
namespace {

namespace fs = std::filesystem;

::onnx::ModelProto base_model(int64_t opset = 17) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

void add_input(::onnx::ModelProto& m, const std::string& name, std::vector<std::string> dims, int32_t type = ::onnx::TensorProto::FLOAT) {
  auto* vi = m.mutable_graph()->add_input();
  vi->set_name(name);
  auto* t = vi->mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  auto* s = t->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = s->add_dim();
    if (!d.empty() && std::isdigit((unsigned char)d[0])) dim->set_dim_value(std::stoll(d));
    else dim->set_dim_param(d);
  }
}

void add_output(::onnx::ModelProto& m, const std::string& name) { m.mutable_graph()->add_output()->set_name(name); }

::onnx::NodeProto* add_node(::onnx::ModelProto& m, const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs,
                            const std::string& name = "") {
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& i : ins) n->add_input(i);
  for (auto& o : outs) n->add_output(o);
  return n;
}

void add_floats(::onnx::ModelProto& m, const std::string& name, std::vector<int64_t> dims, std::vector<float> v) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::FLOAT);
  for (auto d : dims) t->add_dims(d);
  for (float x : v) t->add_float_data(x);
}

std::vector<uint8_t> bytes_of(const ::onnx::ModelProto& m) {
  std::string s;
  m.SerializeToString(&s);
  return {s.begin(), s.end()};
}

ir::Model read(const ::onnx::ModelProto& m) { return onnx::read_onnx_bytes(bytes_of(m), "t.onnx"); }

TEST(OnnxImport, TruncatedOrForeignBytesAreFormatErrors) {
  auto m = base_model();
  add_input(m, "x", {"2", "3"});
  add_floats(m, "w", {3, 2}, {1, 2, 3, 4, 5, 6});
  add_node(m, "MatMul", {"x", "w"}, {"y"});
  add_output(m, "y");
  auto b = bytes_of(m);
  EXPECT_NO_THROW(onnx::read_onnx_bytes(b, "t.onnx"));
  bool refused_any = false;
  for (size_t cut = 1; cut < b.size(); ++cut) {
    try {
      onnx::read_onnx_bytes(std::span<const uint8_t>(b.data(), cut), "t.onnx");
    } catch (const Error& e) {
      refused_any = true;  // any typed error; no crash
    }
  }
  EXPECT_TRUE(refused_any);
  const std::vector<uint8_t> junk = {0xff, 0xff, 0xff, 0xff, 0x0f};
  expect_error([&] { onnx::read_onnx_bytes(junk, "junk.onnx"); }, ErrorCode::kFormat, "junk.onnx", "not an ONNX model");
}

TEST(OnnxImport, DanglingNamesAndCyclesNameTheNode) {
  auto m = base_model();
  add_input(m, "x", {"2"});
  add_node(m, "Relu", {"nope"}, {"y"}, "r1");
  add_output(m, "y");
  expect_error([&] { read(m); }, ErrorCode::kFormat, "node 0 (Relu 'r1')", "'nope'", "dangling");
  auto c = base_model();
  add_input(c, "x", {"2"});
  add_node(c, "Add", {"x", "b"}, {"a"}, "first");
  add_node(c, "Relu", {"a"}, {"b"}, "second");
  add_output(c, "b");
  expect_error([&] { read(c); }, ErrorCode::kFormat, "node 0 (Add 'first')", "'b'", "cycle");
}

TEST(OnnxImport, UnknownOpsDomainsAndVersionsAreNamed) {
  auto m = base_model();
  add_input(m, "x", {"2"});
  add_node(m, "Hardmax", {"x"}, {"y"}, "h");
  add_output(m, "y");
  expect_error([&] { read(m); }, ErrorCode::kUnsupported, "node 0 (Hardmax 'h')", "Hardmax is not mapped");
  auto d = base_model();
  add_input(d, "x", {"2"});
  add_node(d, "Relu", {"x"}, {"y"})->set_domain("com.microsoft");
  add_output(d, "y");
  expect_error([&] { read(d); }, ErrorCode::kUnsupported, "com.microsoft");
  auto old = base_model(9);
  add_input(old, "x", {"2"});
  add_node(old, "Relu", {"x"}, {"y"});
  add_output(old, "y");
  expect_error([&] { read(old); }, ErrorCode::kVersion, "node 0 (Relu)", "op set 9", "from op set 13", "convert_version");
  auto future = base_model(onnx::kNewestOpset + 1);
  add_input(future, "x", {"2"});
  add_node(future, "Relu", {"x"}, {"y"});
  add_output(future, "y");
  expect_error([&] { read(future); }, ErrorCode::kVersion, "op set " + std::to_string(onnx::kNewestOpset + 1),
               "up to " + std::to_string(onnx::kNewestOpset));
}

TEST(OnnxImport, BadTensorDataAndOverflowingShapesAreFormatErrors) {
  auto m = base_model();
  add_input(m, "x", {"3"});
  add_floats(m, "w", {4}, {1, 2, 3});
  add_node(m, "Add", {"x", "w"}, {"y"});
  add_output(m, "y");
  expect_error([&] { read(m); }, ErrorCode::kFormat, "initializer 'w'", "3 values", "4 elements");
  auto big = base_model();
  add_input(big, "x", {"4611686018427387904", "4"});
  add_node(big, "Relu", {"x"}, {"y"});
  add_output(big, "y");
  expect_error([&] { read(big); }, ErrorCode::kFormat, "input 'x'", "overflows");
  auto huge = base_model();
  add_input(huge, "x", {"2"});
  auto* t = huge.mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(::onnx::TensorProto::FLOAT);
  for (int i = 0; i < 3; ++i) t->add_dims(int64_t{1} << 30);
  add_node(huge, "Add", {"x", "w"}, {"y"});
  add_output(huge, "y");
  expect_error([&] { read(huge); }, ErrorCode::kFormat, "initializer 'w'");
}

TEST(OnnxImport, AHugeComputedValueIsRefusedBeforeAnyAllocation) {
  auto m = base_model();
  auto scalar = [&](const std::string& name, float v) { add_floats(m, name, {}, {v}); };
  scalar("start", 0);
  scalar("limit", 1e12f);
  scalar("delta", 1);
  add_node(m, "Range", {"start", "limit", "delta"}, {"y"}, "r");
  add_output(m, "y");
  expect_error([&] { read(m); }, ErrorCode::kUnsupported, "node 0 (Range 'r')", "2^31 elements");
}

TEST(OnnxImport, SymbolicBatchStaysSymbolicAndRunsAtAnyExtent) {
  TempDir dir;
  auto m = base_model();
  add_input(m, "x", {"N", "3"});
  add_floats(m, "w", {2, 3}, {0.5f, -1, 2, 0.25f, 3, -0.5f});
  add_floats(m, "b", {2}, {0.1f, -0.2f});
  auto* g = add_node(m, "Gemm", {"x", "w", "b"}, {"h"});
  auto* tb = g->add_attribute();
  tb->set_name("transB");
  tb->set_type(::onnx::AttributeProto::INT);
  tb->set_i(1);
  add_node(m, "Relu", {"h"}, {"y"});
  add_output(m, "y");
  const auto b = bytes_of(m);
  std::ofstream(dir / "g.onnx", std::ios::binary).write((const char*)b.data(), (std::streamsize)b.size());
  lite::Model model = lite::Model::build_from_file(dir / "g.onnx");
  EXPECT_EQ(model.inputs()[0].str(), "x: float32[N, 3]");
  EXPECT_EQ(model.outputs()[0].str(), "y: float32[N, 2]");
  const Tensor w = Tensor::from_vector(std::vector<float>{0.5f, -1, 2, 0.25f, 3, -0.5f}, Shape{2, 3});
  const Tensor bias = Tensor::from_vector(std::vector<float>{0.1f, -0.2f}, Shape{2});
  for (int64_t n : {1, 4}) {
    const Tensor x = random_uniform({n, 3}, 3, -1, 1);
    EXPECT_EQ(model.predict({x})[0].to_vector<float>(), relu(add(matmul(x, permute(w, {1, 0})), bias)).to_vector<float>()) << n;
  }
  expect_error([&] { model.predict({random_uniform({2, 4}, 3)}); }, ErrorCode::kValue, "input 'x'", "x: float32[N, 3]");
}

TEST(OnnxImport, AShapeGivenAsAnInputIsMappedAtPredict) {
  TempDir dir;
  auto m = base_model();
  add_input(m, "x", {"2", "6"});
  add_input(m, "shape", {"2"}, ::onnx::TensorProto::INT64);
  add_node(m, "Reshape", {"x", "shape"}, {"r"});
  add_node(m, "ReduceSum", {"r"}, {"y"});  // all axes: a [1, 1] result whatever the shape
  add_node(m, "Softmax", {"r"}, {"z"});
  add_output(m, "z");
  add_output(m, "y");
  const auto b = bytes_of(m);
  std::ofstream(dir / "r.onnx", std::ios::binary).write((const char*)b.data(), (std::streamsize)b.size());
  lite::Model model = lite::Model::build_from_file(dir / "r.onnx");
  EXPECT_EQ(model.inputs()[1].str(), "shape: int64[2]");
  const Tensor x = random_uniform({2, 6}, 9, -1, 1);
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{3, 4}, {4, 3}, {3, 4}}) {
    const Tensor s = Tensor::from_vector(shape, Shape{2});
    const auto out = model.predict(std::vector<Tensor>{x, s});
    EXPECT_EQ(out[0].to_vector<float>(), softmax(reshape(x, shape), -1).to_vector<float>()) << shape[0];
    EXPECT_EQ(out[0].shape(), Shape(shape));
  }
  expect_error([&] { model.predict(std::vector<Tensor>{x, Tensor::from_vector(std::vector<int64_t>{5, 5}, Shape{2})}); }, ErrorCode::kShape,
               "reshape");
}

// A graph that reads a symbolic extent (Shape, as PyTorch's exports of a flatten do) is not
// static: the importer says so, and Lite maps it at predict for each batch size.
TEST(OnnxImport, AnExtentReadFromASymbolIsMappedAtPredict) {
  TempDir dir;
  auto m = base_model();
  add_input(m, "x", {"N", "2", "3"});
  add_node(m, "Shape", {"x"}, {"s"});
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("first");
  t->set_data_type(::onnx::TensorProto::INT64);
  t->add_dims(1);
  t->add_int64_data(0);
  add_node(m, "Gather", {"s", "first"}, {"n"});
  auto* minus = m.mutable_graph()->add_initializer();
  minus->set_name("rest");
  minus->set_data_type(::onnx::TensorProto::INT64);
  minus->add_dims(1);
  minus->add_int64_data(-1);
  add_node(m, "Concat", {"n", "rest"}, {"shape"})->add_attribute()->set_name("axis");
  m.mutable_graph()->mutable_node(2)->mutable_attribute(0)->set_type(::onnx::AttributeProto::INT);
  m.mutable_graph()->mutable_node(2)->mutable_attribute(0)->set_i(0);
  add_node(m, "Reshape", {"x", "shape"}, {"y"});
  add_output(m, "y");
  expect_error([&] { read(m); }, ErrorCode::kUnsupported, "symbolic input dimension", "mapped when predict gives the shapes");
  const auto b = bytes_of(m);
  std::ofstream(dir / "f.onnx", std::ios::binary).write((const char*)b.data(), (std::streamsize)b.size());
  lite::Model model = lite::Model::build_from_file(dir / "f.onnx");
  EXPECT_EQ(model.inputs()[0].str(), "x: float32[N, 2, 3]");
  for (int64_t n : {2, 5}) {
    const Tensor x = random_uniform({n, 2, 3}, 4, -1, 1);
    const auto y = model.predict(std::vector<Tensor>{x});
    EXPECT_EQ(y[0].shape(), Shape({n, 6}));
    EXPECT_EQ(y[0].to_vector<float>(), x.to_vector<float>());
  }
}

TEST(OnnxImport, AnUnnamedTypeIsRefusedForOnnxFilesOfAnotherName) {
  TempDir dir;
  std::ofstream(dir / "model.bin", std::ios::binary) << "xx";
  expect_error([&] { lite::Model::build_from_file(dir / "model.bin"); }, ErrorCode::kFormat, "pass the ModelType");
  expect_error([&] { lite::Model::build_from_file(dir / "model.bin", lite::ModelType::kONNX); }, ErrorCode::kFormat,
               "not an ONNX model");
}

}  // namespace
}  // namespace spore::test
