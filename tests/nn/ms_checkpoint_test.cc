// MindSpore's .ckpt (NOTE [MindSpore checkpoints]): the files MindSpore 2.10's save_checkpoint
// wrote (tests/fixtures/mindir, tools/make_mindspore_fixtures.py) read into Spore Cells by name,
// giving MindSpore's outputs, and written back byte for byte; hostile files get typed errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <unistd.h>

#include "mindspore/checkpoint.pb.h"
#include "spore/data.h"
#include "spore/format.h"
#include "spore/ms_checkpoint.h"
#include "spore/nn/activation.h"
#include "spore/nn/dense.h"
#include "spore/ops.h"
#include "test_util.h"

namespace spore::test {
namespace {

namespace fs = std::filesystem;
const fs::path kDir = fs::path(SPORE_SOURCE_DIR) / "tests" / "fixtures" / "mindir";

std::vector<uint8_t> file_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The chapter's Fp16Linear (weight [in, out], bias [out], float16), with weights MindSpore's file
// replaces: initialised to something else on purpose.
class Fp16Linear final : public nn::Cell {
 public:
  Fp16Linear(int64_t in, int64_t out)
      : w_(register_parameter("weight", cast(full({in, out}, 3.0), DType::kFloat16))),
        b_(register_parameter("bias", cast(full({out}, 3.0), DType::kFloat16))) {}
  Tensor construct(const Tensor& x) override { return add(matmul(x, w_.value()), b_.value()); }
  std::string name() const override { return "Fp16Linear"; }

 private:
  Parameter w_, b_;
};

// MindSpore's Mlp of the fixture script: children named fc1 and fc2.
class Mlp final : public nn::Cell {
 public:
  Mlp() {
    fc1_ = register_cell("fc1", std::make_shared<nn::Dense>(4, 8));
    fc2_ = register_cell("fc2", std::make_shared<nn::Dense>(8, 3));
  }
  Tensor construct(const Tensor& x) override { return (*fc2_)(relu((*fc1_)(x))); }
  std::string name() const override { return "Mlp"; }

 private:
  std::shared_ptr<nn::Dense> fc1_, fc2_;
};

double max_error(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const auto x = cast(a, DType::kFloat64).to_vector<double>(), y = cast(b, DType::kFloat64).to_vector<double>();
  double e = x.size() == y.size() ? 0 : INFINITY;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) e = std::max(e, std::abs(x[i] - y[i]));
  return e;
}

TEST(MsCheckpoint, ChaptersFp16LinearLoadsAndPredictsAsMindSpore) {
  const fs::path ckpt = kDir / "fp16_linear.ckpt";
  const std::vector<uint8_t> bytes = file_bytes(ckpt);
  EXPECT_EQ(bytes.size(), 60u);  // the chapter's figure
  EXPECT_EQ(sha256_file(ckpt).substr(0, 8), "ca20a69f");
  Fp16Linear net(4, 1);
  EXPECT_TRUE(ms::load_ms_checkpoint_into(net, ckpt).complete());
  net.set_train(false);
  const Tensor y = net(data::load_npy((kDir / "fp16_linear.in0.npy").string()));
  EXPECT_LE(max_error(y, data::load_npy((kDir / "fp16_linear.out0.npy").string())), 1e-6);
  // Written back from the Cell: MindSpore's bytes.
  EXPECT_EQ(ms::ms_checkpoint_bytes({{"weight", net.named_parameters()[0].second.value()},
                                     {"bias", net.named_parameters()[1].second.value()}}),
            bytes);
}

TEST(MsCheckpoint, MlpLoadsByNameAndPredictsAsMindSpore) {
  Mlp net;
  EXPECT_TRUE(ms::load_ms_checkpoint_into(net, kDir / "mlp.ckpt").complete());
  net.set_train(false);
  const Tensor y = net(data::load_npy((kDir / "mlp.in0.npy").string()));
  EXPECT_LE(max_error(y, data::load_npy((kDir / "mlp.out0.npy").string())), 1e-6);
  // save_ms_checkpoint(Cell) writes what MindSpore wrote for the same network.
  const fs::path out = fs::temp_directory_path() / ("spore_ms_ckpt_" + std::to_string(::getpid()) + ".ckpt");
  ms::save_ms_checkpoint(net, out);
  EXPECT_EQ(file_bytes(out), file_bytes(kDir / "mlp.ckpt"));
  fs::remove(out);
}

TEST(MsCheckpoint, EveryFixtureRoundTripsByteForByte) {
  for (const std::string name : {"fp16_linear", "mlp", "cnn", "cnn_same", "mobilenet_tiny", "misc", "dtypes"}) {
    const std::vector<uint8_t> bytes = file_bytes(kDir / (name + ".ckpt"));
    EXPECT_EQ(ms::ms_checkpoint_bytes(ms::read_ms_checkpoint_bytes(bytes, name)), bytes) << name;
  }
}

TEST(MsCheckpoint, ScalarsIntegersBoolsAndBFloat16) {
  const ms::MsParams p = ms::read_ms_checkpoint(kDir / "dtypes.ckpt");
  ASSERT_EQ(p.size(), 4u);  // MindSpore left the empty tensor out
  EXPECT_EQ(p[0].first, "s");
  EXPECT_EQ(p[0].second.ndim(), 0);
  EXPECT_EQ(p[0].second.to_vector<float>(), std::vector<float>{2.5f});
  EXPECT_EQ(p[1].second.to_vector<int64_t>(), (std::vector<int64_t>{1, -2}));
  EXPECT_EQ(p[2].second.dtype(), DType::kBool);
  EXPECT_EQ(p[3].second.dtype(), DType::kBFloat16);
  EXPECT_EQ(cast(p[3].second, DType::kFloat64).to_vector<double>(), (std::vector<double>{1.5, -0.25}));
}

TEST(MsCheckpoint, ShapeAndDtypeMismatchesNameTheParameter) {
  Fp16Linear wide(4, 2);
  try {
    ms::load_ms_checkpoint_into(wide, kDir / "fp16_linear.ckpt");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kShape);
    EXPECT_NE(std::string(e.what()).find("weight"), std::string::npos) << e.what();
  }
  Mlp mlp;
  EXPECT_THROW(ms::load_ms_checkpoint_into(mlp, kDir / "fp16_linear.ckpt"), Error);  // missing and unexpected names
  const ms::MsParams p = ms::read_ms_checkpoint(kDir / "mlp.ckpt");
  std::map<std::string, Tensor> as_half;
  for (const auto& [n, t] : p) as_half[n] = cast(t, DType::kFloat16);
  try {
    load_param_into_net(mlp, as_half);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDType);
  }
}

Error read_error(const std::string& bytes) {
  try {
    ms::read_ms_checkpoint_bytes(std::span<const uint8_t>((const uint8_t*)bytes.data(), bytes.size()), "hostile.ckpt");
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "accepted";
  return Error(ErrorCode::kInternal, "accepted");
}

TEST(MsCheckpoint, HostileFilesAreTypedErrors) {
  const std::vector<uint8_t> good = file_bytes(kDir / "mlp.ckpt");
  const std::string s(good.begin(), good.end());
  for (size_t n : {size_t{1}, size_t{7}, s.size() / 2, s.size() - 1}) EXPECT_EQ(read_error(s.substr(0, n)).code(), ErrorCode::kFormat) << n;
  spore_ms_ckpt::Checkpoint ck;
  ASSERT_TRUE(ck.ParseFromString(s));
  auto edit = [&](auto f) {
    spore_ms_ckpt::Checkpoint c = ck;
    f(c);
    return read_error(c.SerializeAsString());
  };
  Error e = edit([](auto& c) { c.mutable_value(0)->mutable_tensor()->set_dims(0, 1 << 30); });
  EXPECT_EQ(e.code(), ErrorCode::kFormat);
  EXPECT_NE(std::string(e.what()).find("fc1.weight"), std::string::npos) << e.what();
  e = edit([](auto& c) { c.mutable_value(1)->mutable_tensor()->set_tensor_type("Complex64"); });
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_NE(std::string(e.what()).find("Complex64"), std::string::npos) << e.what();
  e = edit([](auto& c) { c.mutable_value(2)->mutable_tensor()->add_dims(int64_t{1} << 40); });
  EXPECT_EQ(e.code(), ErrorCode::kFormat);
  e = edit([](auto& c) { c.mutable_value(3)->set_tag(""); });
  EXPECT_EQ(e.code(), ErrorCode::kFormat);
  // A tag repeated with another shape (slices must agree).
  e = edit([](auto& c) { c.add_value()->CopyFrom(c.value(1)), c.mutable_value(4)->mutable_tensor()->set_dims(0, 2); });
  EXPECT_EQ(e.code(), ErrorCode::kFormat);
}

// A poor man's fuzzing in the ordinary build (the libFuzzer target ms_ckpt does it properly):
// every byte flipped in turn must read or throw Error.
TEST(MsCheckpoint, EveryFlippedByteReadsOrIsATypedError) {
  const std::vector<uint8_t> good = file_bytes(kDir / "mlp.ckpt");
  int refused = 0;
  for (size_t i = 0; i < good.size(); ++i)
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      std::vector<uint8_t> b = good;
      b[i] ^= mask;
      try {
        ms::read_ms_checkpoint_bytes(b, "flipped");
      } catch (const Error&) {
        ++refused;
      }
    }
  EXPECT_GT(refused, 0);
}

// Random mutations of every seed (flips, cuts, byte runs); what reads must write and read again.
// SPORE_MUTATION_ROUNDS raises the count for a long local run.
TEST(MsCheckpoint, RandomMutationsReadOrAreTypedErrors) {
  const char* env = std::getenv("SPORE_MUTATION_ROUNDS");
  const int rounds = env ? std::atoi(env) : 300;
  std::vector<std::vector<uint8_t>> seeds;
  for (const std::string name : {"fp16_linear", "mlp", "cnn", "dtypes"}) seeds.push_back(file_bytes(kDir / (name + ".ckpt")));
  ByteMutator mutator(0x2545f4914f6cdd1dull);
  int accepted = 0;
  for (int r = 0; r < rounds; ++r) {
    std::vector<uint8_t> b = mutator.mutate(seeds);
    try {
      const ms::MsParams p = ms::read_ms_checkpoint_bytes(b, "mutated");
      ++accepted;
      size_t nonempty = 0;  // an empty tensor is left out of a written file, as MindSpore does
      for (const auto& [name, t] : p) nonempty += t.numel() > 0;
      EXPECT_EQ(ms::read_ms_checkpoint_bytes(ms::ms_checkpoint_bytes(p)).size(), nonempty);
    } catch (const Error&) {
    }
  }
  if (env) printf("%d rounds, %d read\n", rounds, accepted);
  EXPECT_GT(accepted, 0);
}

TEST(MsCheckpoint, SlicesAndTheCrcTrailerAreRead) {
  // A parameter in two slices (the same tag twice, as MindSpore writes large tensors), then the
  // trailer of a file saved with crc_check=True.
  spore_ms_ckpt::Checkpoint c;
  for (int k = 0; k < 2; ++k) {
    auto* v = c.add_value();
    v->set_tag("w");
    v->mutable_tensor()->add_dims(4);
    v->mutable_tensor()->set_tensor_type("Float32");
    const float half[2] = {1.0f + 2 * k, 2.0f + 2 * k};
    v->mutable_tensor()->set_tensor_content(std::string((const char*)half, sizeof(half)));
  }
  std::string s = c.SerializeAsString() + std::string("crc_num") + std::string(10, '\0');
  const ms::MsParams p = ms::read_ms_checkpoint_bytes(std::span<const uint8_t>((const uint8_t*)s.data(), s.size()));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].second.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
}

TEST(MsCheckpoint, TensorBytesEndingLikeTheCrcTrailerRoundTrip) {
  // The last tensor's content ends with "crc_num" and 10 more bytes, as the ms_ckpt fuzz target
  // produced: without a real trailer the whole file is the checkpoint.
  Tensor u = Tensor::empty(Shape{6}, DType::kFloat32, Device::cpu());
  const std::string content = std::string("xxxxxxx") + "crc_num" + "0123456789";  // 24 bytes
  std::memcpy(u.data_ptr(), content.data(), content.size());
  const std::vector<uint8_t> bytes = ms::ms_checkpoint_bytes({{"w", u}});
  ASSERT_EQ(std::string(bytes.end() - 17, bytes.end() - 10), "crc_num");
  const ms::MsParams p = ms::read_ms_checkpoint_bytes(bytes, "tail.ckpt");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].second.to_bytes(), u.to_bytes());
}

}  // namespace
}  // namespace spore::test
