// Checkpoints: a network saved and reloaded gives bit-identical outputs; the on-disk layout is
// plain safetensors (read back here with an independent JSON parse of the header); key, shape and
// dtype mismatches name what is wrong and change nothing; damaged or foreign files are refused with
// the file's name; a writer killed mid-write leaves the old checkpoint intact.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <random>

#include "io/io_test_util.h"
#include "spore/checkpoint.h"
#include "spore/nn/layers.h"
#include "spore/ops.h"
#include "spore/optim.h"

namespace spore {
namespace {

using test::expect_error;
using test::TempDir;

// Embedding -> Dense -> BatchNorm1d -> ReLU -> Dense: trainable, non-trainable (moving
// statistics) and integer-indexed parameters in one network. `seed` picks the initial values.
std::shared_ptr<nn::SequentialCell> make_net(uint64_t seed) {
  return std::make_shared<nn::SequentialCell>(
      std::vector<nn::CellPtr>{std::make_shared<nn::Embedding>(10, 6, seed),
                               std::make_shared<nn::Dense>(6, 8, true, nullptr, seed + 1),
                               std::make_shared<nn::BatchNorm1d>(8), std::make_shared<nn::ReLU>(),
                               std::make_shared<nn::Dense>(8, 3, true, nullptr, seed + 2)});
}

Tensor ids(std::vector<int64_t> v) {
  return Tensor::from_vector(v, Shape{(int64_t)v.size()});
}

// A few training-mode passes so that the BatchNorm moving statistics are no longer their initial
// zeros and ones (a checkpoint that dropped them would then be caught by the output comparison).
void warm_up(nn::Cell& net) {
  net.set_train(true);
  net(ids({0, 3, 5, 7, 9, 2}));
  net(ids({1, 1, 4, 8, 6, 0}));
  net.set_train(false);
}

double host_max_abs_diff(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  EXPECT_EQ(x.size(), y.size());
  double m = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

// The exact bytes of every parameter, to show that a failed load changed nothing.
std::map<std::string, std::vector<uint8_t>> snapshot(const nn::Cell& net) {
  std::map<std::string, std::vector<uint8_t>> out;
  for (const auto& [n, p] : net.named_parameters()) out[n] = p.value().to_bytes();
  return out;
}

// The safetensors header parsed here, independently of Spore's reader.
nlohmann::json read_header(const std::filesystem::path& path) {
  std::string raw = test::read_raw(path);
  uint64_t n = 0;
  EXPECT_GE(raw.size(), 8u);
  std::memcpy(&n, raw.data(), 8);
  EXPECT_LE(8 + n, raw.size());
  return nlohmann::json::parse(raw.substr(8, n));
}

TEST(Checkpoint, NetworkRoundTripIsBitExact) {
  TempDir dir;
  auto net = make_net(11);
  warm_up(*net);
  Tensor x = ids({0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor want = (*net)(x);
  save_checkpoint(*net, dir / "net.safetensors");

  auto fresh = make_net(500);
  fresh->set_train(false);
  ASSERT_GT(host_max_abs_diff((*fresh)(x), want), 0.0) << "the fresh network must start different";
  Checkpoint ckpt = load_checkpoint(dir / "net.safetensors");
  LoadReport r = load_param_into_net(*fresh, ckpt);
  EXPECT_TRUE(r.complete());
  EXPECT_EQ(host_max_abs_diff((*fresh)(x), want), 0.0);

  // Every parameter, trainable or not, came back with its name, dtype and bytes.
  auto names = net->named_parameters();
  EXPECT_EQ(ckpt.tensors.size(), names.size());
  for (const auto& [n, p] : names) {
    ASSERT_TRUE(ckpt.tensors.count(n)) << n;
    EXPECT_EQ(ckpt.tensors.at(n).to_bytes(), p.value().to_bytes()) << n;
  }
  ASSERT_TRUE(ckpt.tensors.count("2.moving_mean"));
  ASSERT_TRUE(ckpt.tensors.count("2.moving_variance"));
  EXPECT_NE(ckpt.tensors.at("2.moving_mean").to_vector<float>(), std::vector<float>(8, 0.0f));
  EXPECT_EQ(dir.list(), std::vector<std::string>{"net.safetensors"});  // no temporary left

  // Saving the same parameters again gives the same bytes (nothing run-dependent in the file).
  save_checkpoint(*fresh, dir / "again.safetensors");
  EXPECT_EQ(sha256_file(dir / "again.safetensors"), sha256_file(dir / "net.safetensors"));
}

// Optimizers update parameters in place: a network loaded from a map must own its values, so
// training it changes neither the map nor a second network loaded from the same map.
TEST(Checkpoint, LoadedParametersAreCopiesNotAliases) {
  auto net = make_net(11);
  std::map<std::string, Tensor> params;
  for (const auto& [n, p] : net->named_parameters()) params[n] = p.value().clone();
  auto a = make_net(1), b = make_net(2);
  load_param_into_net(*a, params);
  load_param_into_net(*b, params);
  const auto before = snapshot(*b);
  std::vector<Parameter> trainable = a->trainable_params();
  optim::SGD sgd(trainable, 0.5);
  std::vector<Tensor> grads;
  for (const Parameter& p : trainable) grads.push_back(ones_like(p.value()));
  sgd(grads);  // an in-place update of every trainable parameter of a
  EXPECT_EQ(snapshot(*b), before) << "training one network changed another loaded from the same map";
  for (const auto& [n, p] : a->named_parameters())
    if (p.requires_grad()) {
      EXPECT_GT(host_max_abs_diff(p.value(), params.at(n)), 0.0) << n << ": the update did not happen";
    }
  for (const auto& [n, p] : net->named_parameters())
    EXPECT_EQ(params.at(n).to_bytes(), p.value().to_bytes()) << n << ": the caller's map changed";
}

TEST(Checkpoint, OnDiskLayoutIsPlainSafetensors) {
  TempDir dir;
  auto net = make_net(3);
  save_checkpoint(*net, dir / "c.safetensors", {{"epoch", "7"}});
  nlohmann::json h = read_header(dir / "c.safetensors");
  ASSERT_TRUE(h.contains("__metadata__"));
  const auto& md = h["__metadata__"];
  EXPECT_EQ(md["format"], "spore-checkpoint");
  EXPECT_EQ(md["format_version"], "1");
  EXPECT_EQ(md["framework"], "spore");
  EXPECT_EQ(md["framework_version"], std::string(framework_version()));
  EXPECT_EQ(md["epoch"], "7");
  for (const auto& [n, p] : net->named_parameters()) {
    ASSERT_TRUE(h.contains(n)) << n;
    EXPECT_EQ(h[n]["dtype"], "F32") << n;
    EXPECT_EQ(h[n]["shape"].get<std::vector<int64_t>>(), p.value().shape().to_vector()) << n;
  }
  EXPECT_EQ(h.size(), net->named_parameters().size() + 1);

  Checkpoint c = load_checkpoint(dir / "c.safetensors");
  EXPECT_TRUE(c.is_spore_checkpoint());
  EXPECT_EQ(c.format_version(), 1);
  EXPECT_EQ(c.metadata.at("epoch"), "7");
  expect_error(
      [&] {
        save_checkpoint(*net, dir / "d.safetensors", {{"format", "mine"}});
      },
      ErrorCode::kValue, {"'format'", "reserved"});
  EXPECT_FALSE(std::filesystem::exists(dir / "d.safetensors"));
}

TEST(Checkpoint, ParametersKeepTheirOwnDtypeUnderToFloat) {
  TempDir dir;
  auto net = make_net(5);
  net->to_float(DType::kFloat16);
  save_checkpoint(*net, dir / "c.safetensors");
  for (const auto& [n, t] : load_checkpoint(dir / "c.safetensors").tensors)
    EXPECT_EQ(t.dtype(), DType::kFloat32) << n;
}

TEST(Checkpoint, RawDictOfEveryDtypeRoundTrips) {
  TempDir dir;
  std::vector<std::pair<std::string, Tensor>> dict;
  std::vector<double> v = {0.5, -1.25, 3, 0, 1, -2};
  for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64, DType::kInt8,
                  DType::kUInt8, DType::kInt32, DType::kInt64, DType::kBool}) {
    std::vector<double> vals = v;
    for (auto& x : vals) {
      if (t == DType::kBool)
        x = x > 0;
      else if (t == DType::kUInt8)
        x = std::abs(std::round(x));
      else if (!is_floating(t))
        x = std::round(x);
    }
    dict.emplace_back(std::string("t_") + dtype_name(t),
                      cast(Tensor::from_vector(vals, Shape{2, 3}), t));
  }
  save_checkpoint(dict, dir / "d.safetensors");
  Checkpoint c = load_checkpoint(dir / "d.safetensors");
  ASSERT_EQ(c.tensors.size(), dict.size());
  for (const auto& [n, t] : dict) {
    const Tensor& back = c.tensors.at(n);
    EXPECT_EQ(back.dtype(), t.dtype()) << n;
    EXPECT_EQ(back.shape(), t.shape()) << n;
    EXPECT_EQ(back.to_bytes(), t.to_bytes()) << n;
  }
  // The map overload writes the same file as the vector with the same contents.
  std::map<std::string, Tensor> m(dict.begin(), dict.end());
  save_checkpoint(m, dir / "m.safetensors");
  EXPECT_EQ(sha256_file(dir / "m.safetensors"), sha256_file(dir / "d.safetensors"));
  expect_error(
      [&] {
        save_checkpoint({{"a", dict[0].second}, {"a", dict[1].second}}, dir / "x.safetensors");
      },
      ErrorCode::kValue, {"'a'", "twice"});
}

TEST(Checkpoint, MissingAndUnexpectedKeys) {
  auto net = make_net(1);
  auto src = make_net(2);
  std::map<std::string, Tensor> dict;
  for (const auto& [n, p] : src->named_parameters()) dict[n] = p.value();
  dict.erase("4.bias");
  dict.erase("2.gamma");
  dict["head.weight"] = Tensor::from_vector<float>({1, 2});

  auto before = snapshot(*net);
  try {
    load_param_into_net(*net, dict);
    ADD_FAILURE() << "strict load with missing keys must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kValue);
    std::string m = e.what();
    for (const char* part :
         {"'4.bias'", "'2.gamma'", "'head.weight'", "Missing", "Unexpected", "strict"})
      EXPECT_NE(m.find(part), std::string::npos) << part << " not in: " << m;
  }
  EXPECT_EQ(snapshot(*net), before);

  LoadReport r = load_param_into_net(*net, dict, /*strict=*/false);
  EXPECT_EQ(r.missing_keys, (std::vector<std::string>{"2.gamma", "4.bias"}));
  EXPECT_EQ(r.unexpected_keys, std::vector<std::string>{"head.weight"});
  EXPECT_FALSE(r.complete());
  auto after = snapshot(*net);
  for (const auto& [n, bytes] : after) {
    if (n == "2.gamma" || n == "4.bias")
      EXPECT_EQ(bytes, before.at(n)) << n << " must keep its value";
    else
      EXPECT_EQ(bytes, dict.at(n).to_bytes()) << n << " must be loaded";
  }
}

TEST(Checkpoint, ShapeAndDtypeMismatchesNameTheParameter) {
  std::map<std::string, Tensor> dict;
  nn::SequentialCell wide({std::make_shared<nn::Dense>(5, 3, true, nullptr, 1)});
  for (const auto& [n, p] : wide.named_parameters()) dict[n] = p.value();

  nn::SequentialCell net({std::make_shared<nn::Dense>(4, 3, true, nullptr, 2)});
  const auto net_before = snapshot(net);
  expect_error([&] { load_param_into_net(net, dict); }, ErrorCode::kShape,
               {"'0.weight'", "[3, 5]", "[3, 4]"});
  EXPECT_EQ(snapshot(net), net_before);  // 0.bias matched, but nothing is set when anything fails
  // Not even a non-strict load sets anything when a shape is wrong.
  expect_error([&] { load_param_into_net(net, dict, false); }, ErrorCode::kShape, {"'0.weight'"});
  EXPECT_EQ(snapshot(net), net_before);

  nn::SequentialCell f64({std::make_shared<nn::Dense>(5, 3, true, nullptr, 2, DType::kFloat64)});
  const auto f64_before = snapshot(f64);
  expect_error([&] { load_param_into_net(f64, dict); }, ErrorCode::kDType,
               {"'0.weight'", "'0.bias'", "float32", "float64"});
  EXPECT_EQ(snapshot(f64), f64_before);
}

// A file that is not a complete checkpoint: kFormat naming the file, and the network unchanged.
void expect_refused(nn::Cell& net, const std::filesystem::path& path,
                    const std::vector<std::string>& parts) {
  auto before = snapshot(net);
  std::vector<std::string> want = parts;
  want.push_back(path.filename().string());
  expect_error([&] { load_param_into_net(net, load_checkpoint(path)); }, ErrorCode::kFormat, want);
  EXPECT_EQ(snapshot(net), before);
}

TEST(Checkpoint, DamagedAndForeignFilesAreRefused) {
  TempDir dir;
  auto net = make_net(4);
  save_checkpoint(*make_net(9), dir / "good.safetensors");
  std::string good = test::read_raw(dir / "good.safetensors");
  uint64_t hlen = 0;
  std::memcpy(&hlen, good.data(), 8);

  // Truncated at several places: inside the length, inside the header, inside the data, one byte
  // short.
  for (size_t cut : {(size_t)4, (size_t)8 + hlen / 2, (size_t)8 + hlen + 10, good.size() - 1}) {
    test::write_raw(dir / "cut.safetensors", good.substr(0, cut));
    SCOPED_TRACE("cut at " + std::to_string(cut));
    expect_refused(*net, dir / "cut.safetensors", {});
  }
  // Corrupted header: broken JSON, and a tensor whose extent no longer matches its shape.
  std::string broken = good;
  broken[8] = 'x';
  test::write_raw(dir / "broken.safetensors", broken);
  expect_refused(*net, dir / "broken.safetensors", {});
  std::string lying = good;
  size_t at = lying.find("[8]");  // a shape in the header (Dense bias / BatchNorm)
  ASSERT_NE(at, std::string::npos);
  lying[at + 1] = '9';
  test::write_raw(dir / "lying.safetensors", lying);
  expect_refused(*net, dir / "lying.safetensors", {});

  // Other formats: a NumPy .npy file and random bytes.
  std::string npy = std::string("\x93NUMPY\x01\x00", 8) + std::string("v\0", 2) +
                    "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }          \n" +
                    std::string(8, '\0');
  test::write_raw(dir / "weights.npy", npy);
  expect_refused(*net, dir / "weights.npy", {"NumPy"});
  std::mt19937 gen(42);
  std::string noise(4096, '\0');
  for (char& c : noise) c = (char)(gen() & 0xff);
  test::write_raw(dir / "noise.bin", noise);
  expect_refused(*net, dir / "noise.bin", {});
  test::write_raw(dir / "empty.ckpt", "");
  expect_refused(*net, dir / "empty.ckpt", {});
  expect_error([&] { load_checkpoint(dir / "absent.safetensors"); }, ErrorCode::kIO,
               {"absent.safetensors"});
}

TEST(Checkpoint, VersionsAndForeignSafetensors) {
  TempDir dir;
  Tensor w = Tensor::from_vector<float>({1, 2, 3});
  // Another tool's file (Hugging Face writes {"format": "pt"}): loads as it is.
  save_safetensors(dir / "hf.safetensors", {{"w", w}}, {{"format", "pt"}});
  Checkpoint hf = load_checkpoint(dir / "hf.safetensors");
  EXPECT_FALSE(hf.is_spore_checkpoint());
  EXPECT_EQ(hf.format_version(), 0);
  EXPECT_EQ(hf.tensors.at("w").to_vector<float>(), (std::vector<float>{1, 2, 3}));
  save_safetensors(dir / "bare.safetensors", {{"w", w}});
  EXPECT_EQ(load_checkpoint(dir / "bare.safetensors").tensors.size(), 1u);

  // A newer spore checkpoint: refused before any tensor is read, saying what to do.
  save_safetensors(
      dir / "new.safetensors", {{"w", w}},
      {{"format", "spore-checkpoint"}, {"format_version", "2"}, {"framework_version", "9.0.0"}});
  expect_error([&] { load_checkpoint(dir / "new.safetensors"); }, ErrorCode::kVersion,
               {"new.safetensors", "format version 2", "9.0.0", "up to 1", "Upgrade"});
  save_safetensors(dir / "odd.safetensors", {{"w", w}},
                   {{"format", "spore-checkpoint"}, {"format_version", "one"}});
  expect_error([&] { load_checkpoint(dir / "odd.safetensors"); }, ErrorCode::kFormat,
               {"odd.safetensors", "'one'"});
}

// A writer SIGKILLed part-way through replacing a good checkpoint. The kill is deterministic: the
// child caps its file size (RLIMIT_FSIZE), so the write that crosses the cap raises SIGXFSZ inside
// write(2), and the child's handler turns that into SIGKILL on itself: killed in the middle of the
// data, every run, with no timing guesswork.
TEST(Checkpoint, KilledWriterLeavesOldCheckpointIntact) {
  TempDir dir;
  auto target = dir / "model.safetensors";
  auto old_net = make_net(21);
  save_checkpoint(*old_net, target);
  const std::string old_sha = sha256_file(target);

  // 200 MB of parameters (4 tensors of 50 MB), made before the fork and shared copy-on-write.
  std::vector<std::pair<std::string, Tensor>> big;
  for (int i = 0; i < 4; ++i) {
    Tensor t = Tensor::empty(Shape{50 << 18}, DType::kFloat32, Device::cpu());  // 50 MiB
    float* p = t.data<float>();
    for (int64_t k = 0; k < t.numel(); ++k) p[k] = (float)(k % 977) + i;
    big.emplace_back("layer" + std::to_string(i) + ".weight", t);
  }
  constexpr rlim_t kCap = 64 << 20;  // dies after 64 MiB of the ~200 MiB file

  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, [](int) { ::raise(SIGKILL); });
    struct rlimit lim = {kCap, kCap};
    if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) ::_exit(3);
    try {
      save_checkpoint(big, target);
    } catch (...) {
      ::_exit(4);
    }
    ::_exit(5);  // the whole file was written: the cap did not bite
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGKILL);

  // The real name still holds the complete old checkpoint; the only other file is the child's
  // temporary file, cut off at the cap.
  EXPECT_EQ(sha256_file(target), old_sha);
  std::vector<std::string> names = dir.list();
  ASSERT_EQ(names.size(), 2u);
  std::string tmp = names[0] == "model.safetensors" ? names[1] : names[0];
  EXPECT_EQ(tmp.rfind(".model.safetensors.tmp." + std::to_string(pid) + ".", 0), 0u) << tmp;
  EXPECT_EQ(std::filesystem::file_size(dir / tmp), (uintmax_t)kCap);

  auto fresh = make_net(99);
  load_param_into_net(*fresh, load_checkpoint(target));
  EXPECT_EQ(snapshot(*fresh), snapshot(*old_net));
  // The leftover is refused if someone points the loader at it, and does not block the next save.
  expect_error([&] { load_checkpoint(dir / tmp); }, ErrorCode::kFormat, {tmp});
  save_checkpoint(*fresh, target);
  EXPECT_EQ(sha256_file(target), old_sha);
}

}  // namespace
}  // namespace spore
