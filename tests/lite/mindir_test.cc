// MindIR in (NOTE [MindIR]): MindSpore 2.10's own exports (tests/fixtures/mindir, written by
// tools/make_mindspore_fixtures.py with the real MindSpore from PyPI) run in Spore Lite and give
// MindSpore's outputs; versions 1 to 3 load, a newer one is refused with the chapter's message,
// and hostile files get typed errors naming the node.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "../io/io_test_util.h"
#include "mindspore/mind_ir.pb.h"
#include "spore/data.h"
#include "spore/lite.h"
#include "spore/mindir.h"
#include "spore/ops.h"

namespace spore::test {
namespace {

namespace fs = std::filesystem;
const fs::path kDir = fs::path(SPORE_SOURCE_DIR) / "tests" / "fixtures" / "mindir";

std::vector<double> as_doubles(const Tensor& t) { return t.to(DType::kFloat64).contiguous().to_vector<double>(); }

// Runs NAME.mindir (or FILE) in Lite on NAME.in*.npy and compares with MindSpore's NAME.out0.npy.
double max_error(const std::string& name, const std::string& file) {
  lite::Model model = lite::Model::build_from_file(kDir / file, lite::ModelType::kMindIR);
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < model.inputs().size(); ++i)
    inputs.push_back(data::load_npy((kDir / (name + ".in" + std::to_string(i) + ".npy")).string()));
  const std::vector<Tensor> out = model.predict(inputs);
  EXPECT_EQ(out.size(), 1u);
  const Tensor want = data::load_npy((kDir / (name + ".out0.npy")).string());
  EXPECT_EQ(out[0].shape(), want.shape()) << file;
  EXPECT_EQ(out[0].dtype(), want.dtype()) << file;
  const std::vector<double> a = as_doubles(out[0]), b = as_doubles(want);
  double err = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) err = std::max(err, std::abs(a[i] - b[i]));
  if (getenv("MINDIR_DEBUG")) printf("%s: max abs error %g over %zu values, first %g vs %g\n", file.c_str(), err, a.size(), a[0], b[0]);
  return err;
}

TEST(MindIR, MindSporesOwnExportsMatchMindSporesOutputs) {
  for (const std::string name : {"fp16_linear", "mlp", "cnn", "cnn_same", "mobilenet_tiny", "misc", "addnet"})
    EXPECT_LE(max_error(name, name + ".mindir"), 1e-6) << name;
}

TEST(MindIR, ATupleOfOutputsIsSeveralOutputs) {
  lite::Model m = lite::Model::build_from_file(kDir / "twoout.mindir");
  ASSERT_EQ(m.outputs().size(), 2u);
  EXPECT_EQ(m.outputs()[0].str(), "output0: float32[2, 3]");
  EXPECT_EQ(m.outputs()[1].name, "output1");
  const std::vector<Tensor> out =
      m.predict(std::vector<Tensor>{data::load_npy((kDir / "twoout.in0.npy").string()), data::load_npy((kDir / "twoout.in1.npy").string())});
  ASSERT_EQ(out.size(), 2u);
  for (int k = 0; k < 2; ++k) {
    const std::vector<double> a = as_doubles(out[k]),
                              b = as_doubles(data::load_npy((kDir / ("twoout.out" + std::to_string(k) + ".npy")).string()));
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_LE(std::abs(a[i] - b[i]), 1e-6) << k << " " << i;
  }
}

TEST(MindIR, VersionsOneToThreeLoad) {
  for (const std::string name : {"fp16_linear", "mlp"})
    for (const std::string v : {".v1", ".v2", ""}) EXPECT_LE(max_error(name, name + v + ".mindir"), 1e-6) << name << v;
}

TEST(MindIR, SignatureUsesTheShortNames) {
  lite::Model m = lite::Model::build_from_file(kDir / "addnet.mindir");
  ASSERT_EQ(m.inputs().size(), 2u);
  EXPECT_EQ(m.inputs()[0].str(), "x: float32[2, 3]");
  EXPECT_EQ(m.inputs()[1].name, "y");
  lite::Model f = lite::Model::build_from_file(kDir / "fp16_linear.mindir");
  EXPECT_EQ(f.inputs()[0].str(), "x: float16[1, 4]");
}

TEST(MindIR, NewerVersionIsRefusedWithTheWaysOut) {
  try {
    lite::Model::build_from_file(kDir / "fp16_linear.v4.mindir");
    FAIL() << "a version-4 file was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kVersion);
    const std::string m = e.what();
    EXPECT_NE(m.find("fp16_linear.v4.mindir"), std::string::npos) << m;
    EXPECT_NE(m.find("can only support the maximum mind ir version: 3"), std::string::npos) << m;
    EXPECT_NE(m.find("support the mind ir version: 4"), std::string::npos) << m;
    EXPECT_NE(m.find("reads MindIR versions 1 to 3"), std::string::npos) << m;
    EXPECT_NE(m.find("Ways out"), std::string::npos) << m;
  }
}

TEST(MindIR, DetectedByContentWithoutTheExtension) {
  TempDir dir;
  fs::copy_file(kDir / "mlp.mindir", dir / "model.bin");
  lite::Model m = lite::Model::build_from_file(dir / "model.bin");
  EXPECT_EQ(m.outputs()[0].shape, (std::vector<int64_t>{2, 3}));
}

// `spore lite run` on MindSpore's file, found by its content under another name.
TEST(MindIR, LiteRunOnTheCommandLine) {
  TempDir dir;
  fs::copy_file(kDir / "cnn.mindir", dir / "cnn.model");
  const std::string cmd = std::string(SPORE_BINARY_DIR) + "/bin/spore lite run " + (dir / "cnn.model").string() + " --input x=" +
                          (kDir / "cnn.in0.npy").string() + " --output " + dir.path().string() + " --repeat 1 > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::vector<double> got = as_doubles(data::load_npy((dir / "output.npy").string()));
  const std::vector<double> want = as_doubles(data::load_npy((kDir / "cnn.out0.npy").string()));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_LE(std::abs(got[i] - want[i]), 1e-6) << i;
  // A too-new file: the command fails with the version message.
  const std::string refuse = std::string(SPORE_BINARY_DIR) + "/bin/spore lite run " + (kDir / "fp16_linear.v4.mindir").string() +
                             " --zeros > /dev/null 2>&1";
  EXPECT_NE(std::system(refuse.c_str()), 0);
}

// ---- hostile files -------------------------------------------------------------------------------
spore_mindir::ModelProto load(const std::string& file) {
  std::ifstream f(kDir / file, std::ios::binary);
  spore_mindir::ModelProto m;
  EXPECT_TRUE(m.ParseFromIstream(&f));
  return m;
}

Error read_error(const spore_mindir::ModelProto& m) {
  const std::string s = m.SerializeAsString();
  try {
    mindir::read_mindir_bytes(std::span<const uint8_t>((const uint8_t*)s.data(), s.size()), "hostile.mindir");
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "accepted";
  return Error(ErrorCode::kInternal, "accepted");
}

TEST(MindIR, TruncatedFilesAreFormatErrors) {
  std::ifstream f(kDir / "cnn.mindir", std::ios::binary);
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  for (size_t n : {size_t{0}, size_t{1}, bytes.size() / 3, bytes.size() / 2, bytes.size() - 1}) {
    try {
      mindir::read_mindir_bytes(std::span<const uint8_t>(bytes.data(), n), "cut.mindir");
      ADD_FAILURE() << "a file cut at " << n << " bytes was accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(e.code() == ErrorCode::kFormat || e.code() == ErrorCode::kVersion) << n << ": " << e.what();
    }
  }
}

TEST(MindIR, DanglingInputNameIsAFormatError) {
  spore_mindir::ModelProto m = load("mlp.mindir");
  for (auto& n : *m.mutable_graph()->mutable_node())
    if (n.op_type().find("ReLU") != std::string::npos) n.set_input(0, "nowhere");
  const Error e = read_error(m);
  EXPECT_EQ(e.code(), ErrorCode::kFormat);
  EXPECT_NE(std::string(e.what()).find("input 'nowhere' is not defined"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("ReLU"), std::string::npos) << e.what();
}

TEST(MindIR, UnknownPrimitiveIsUnsupportedNamingIt) {
  spore_mindir::ModelProto m = load("mlp.mindir");
  for (auto& p : *m.mutable_primitives())
    if (p.op_type() == "ReLU") p.set_op_type("Frobnicate");
  const Error e = read_error(m);
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_NE(std::string(e.what()).find("the primitive 'Frobnicate'"), std::string::npos) << e.what();
}

TEST(MindIR, MissingPrimitiveAndBadDataAreFormatErrors) {
  spore_mindir::ModelProto m = load("mlp.mindir");
  m.mutable_primitives()->RemoveLast();
  EXPECT_EQ(read_error(m).code(), ErrorCode::kFormat);
  m = load("mlp.mindir");
  m.mutable_graph()->mutable_parameter(0)->add_dims(1 << 20);  // the data no longer fits the shape
  const Error e = read_error(m);
  EXPECT_EQ(e.code(), ErrorCode::kFormat);
  EXPECT_NE(std::string(e.what()).find("fc1.weight"), std::string::npos) << e.what();
  m = load("mlp.mindir");
  m.mutable_graph()->mutable_output(0)->mutable_tensor(0)->set_dims(1, 7);  // declared [2, 7], computes [2, 3]
  EXPECT_EQ(read_error(m).code(), ErrorCode::kFormat);
}

TEST(MindIR, UnsupportedAttributeValueNamesTheNode) {
  spore_mindir::ModelProto m = load("cnn.mindir");
  for (auto& p : *m.mutable_primitives())
    if (p.op_type() == "Conv2D")
      for (auto& a : *p.mutable_attribute())
        if (a.name() == "format") a.set_s("NHWC");
  const Error e = read_error(m);
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_NE(std::string(e.what()).find("Conv2D"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("format 'NHWC'"), std::string::npos) << e.what();
}

// A poor man's fuzzing in the ordinary build (the libFuzzer target mindir does it properly):
// every byte of the chapter's export flipped in turn, and every cut, must read or throw Error.
TEST(MindIR, EveryFlippedByteReadsOrIsATypedError) {
  std::ifstream f(kDir / "fp16_linear.mindir", std::ios::binary);
  const std::vector<uint8_t> good{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  int accepted = 0, refused = 0;
  for (size_t i = 0; i < good.size(); i += 3) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      std::vector<uint8_t> b = good;
      b[i] ^= mask;
      try {
        mindir::read_mindir_bytes(b, "flipped");
        ++accepted;
      } catch (const Error&) {
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(accepted, 0);  // flips inside names and metadata still map
}

// Random mutations of every seed (flips, cuts, byte runs), then build and plan in Lite: a
// deterministic mini-fuzzer for the ordinary build. SPORE_MUTATION_ROUNDS raises the count (a long
// local run); the default keeps the test well under a second.
TEST(MindIR, RandomMutationsReadOrAreTypedErrors) {
  const char* env = std::getenv("SPORE_MUTATION_ROUNDS");
  const int rounds = env ? std::atoi(env) : 300;
  std::vector<std::vector<uint8_t>> seeds;
  for (const std::string name : {"fp16_linear", "mlp", "cnn", "cnn_same", "mobilenet_tiny", "twoout", "misc", "addnet", "mlp.v1"}) {
    std::ifstream f(kDir / (name + ".mindir"), std::ios::binary);
    seeds.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  ByteMutator mutator(0x9e3779b97f4a7c15ull);
  TempDir dir;
  const fs::path file = dir / "mutated.mindir";
  int accepted = 0;
  for (int r = 0; r < rounds; ++r) {
    std::vector<uint8_t> b = mutator.mutate(seeds);
    try {
      ir::Model m = mindir::read_mindir_bytes(b, "mutated");
      ++accepted;
      // What maps is built (and planned) by Lite too: its errors must be typed as well.
      std::ofstream(file, std::ios::binary | std::ios::trunc).write((const char*)b.data(), (std::streamsize)b.size());
      lite::Model::build_from_file(file, lite::ModelType::kMindIR);
    } catch (const Error&) {
    }
  }
  if (env) printf("%d rounds, %d mapped\n", rounds, accepted);
  EXPECT_GT(accepted, 0);
}

TEST(MindIR, WrongInputToPredictNamesTheSignature) {
  lite::Model m = lite::Model::build_from_file(kDir / "mlp.mindir");
  try {
    m.predict({zeros({2, 5})});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kValue);
    EXPECT_NE(std::string(e.what()).find("x: float32[2, 4]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace spore::test
