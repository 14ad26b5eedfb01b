// NOTE [External storage]: tensors over a read-only mapping of a file (map_file, view_bytes) and
// over external memory with a keep-alive owner.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <memory>

#include "io_test_util.h"
#include "spore/format.h"
#include "spore/op_registry.h"
#include "spore/ops.h"

namespace spore {
namespace {

int open_fds() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

Tensor weights() { return Tensor::from_vector<float>({0.5f, -1.0f, 2.25f, 8.0f, -3.5f, 1e-3f}, Shape{2, 3}); }

TEST(MappedFile, ViewsTheFilesBytesWithoutACopy) {
  test::TempDir dir;
  const auto path = dir / "w.safetensors";
  save_safetensors(path, {{"w", weights()}});
  SafeTensorsFile file(path);
  const SafeTensorInfo& info = file.info("w");

  Tensor bytes = map_file(path);
  EXPECT_EQ(bytes.dtype(), DType::kUInt8);
  EXPECT_EQ(bytes.numel(), (int64_t)std::filesystem::file_size(path));
  EXPECT_TRUE(bytes.storage()->external());
  EXPECT_FALSE(bytes.storage()->writable());

  Tensor w = view_bytes(bytes, file.data_offset() + info.begin, info.shape, info.dtype);
  // The same memory: the tensor's first element is the mapping's byte at the tensor's offset.
  EXPECT_EQ(w.data_ptr(), static_cast<char*>(bytes.data_ptr()) + file.data_offset() + info.begin);
  EXPECT_EQ(w.storage(), bytes.storage());
  EXPECT_EQ(w.to_vector<float>(), weights().to_vector<float>());
  // Ops read it like any tensor; their outputs are ordinary, writable tensors.
  Tensor y = mul(w, w);
  EXPECT_TRUE(y.storage()->writable());
  EXPECT_FALSE(y.storage()->external());
  EXPECT_EQ(y.to_vector<float>(), mul(weights(), weights()).to_vector<float>());
}

TEST(MappedFile, MappingOutlivesTheFileHandleAndTheFile) {
  test::TempDir dir;
  const auto path = dir / "w.safetensors";
  save_safetensors(path, {{"w", weights()}});
  SafeTensorsFile file(path);
  const uint64_t at = file.data_offset() + file.info("w").begin;

  const int before = open_fds();
  Tensor w = view_bytes(map_file(path), at, Shape{2, 3}, DType::kFloat32);  // the bytes tensor is gone
  EXPECT_EQ(open_fds(), before) << "map_file must close its descriptor";
  std::filesystem::remove(path);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_EQ(w.to_vector<float>(), weights().to_vector<float>());
  EXPECT_EQ(slice(w, 1, 1, 3).to_vector<float>(), (std::vector<float>{-1.0f, 2.25f, -3.5f, 1e-3f}));
}

TEST(MappedFile, WritesThroughDispatchAreRefused) {
  test::TempDir dir;
  const auto path = dir / "w.safetensors";
  save_safetensors(path, {{"w", weights()}});
  SafeTensorsFile file(path);
  Tensor w = view_bytes(map_file(path), file.data_offset() + file.info("w").begin, Shape{2, 3},
                        DType::kFloat32);
  Tensor grad = ones_like(w);
  Tensor buf = zeros_like(w);
  Tensor sgd_in[3] = {w, grad, buf};
  try {
    dispatch(OpId::k_sgd_update, sgd_in, Attrs{0.1, 0.0, 0.0, 0.0, false, true});
    FAIL() << "expected a read-only error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kValue);
    EXPECT_NE(std::string(e.what()).find("sgd_update"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("read-only"), std::string::npos) << e.what();
  }
  Tensor m = zeros_like(w), v = zeros_like(w);
  Tensor adam_in[4] = {w, grad, m, v};
  EXPECT_THROW(dispatch(OpId::k_adam_update, adam_in, Attrs{0.1, 0.9, 0.999, 1e-8, 0.0, int64_t{1}, false}),
               Error);
  EXPECT_EQ(w.to_vector<float>(), weights().to_vector<float>());  // nothing was written
  // A copy is ordinary memory and trains.
  Tensor copy = w.clone();
  Tensor copy_in[3] = {copy, grad, buf};
  dispatch(OpId::k_sgd_update, copy_in, Attrs{0.5, 0.0, 0.0, 0.0, false, true});
  EXPECT_EQ(copy.to_vector<float>()[0], 0.0f);
}

TEST(MappedFile, BadViewsAndEmptyFiles) {
  test::TempDir dir;
  const auto path = dir / "w.safetensors";
  save_safetensors(path, {{"w", weights()}});
  Tensor bytes = map_file(path);
  try {
    view_bytes(bytes, 1, Shape{2}, DType::kFloat32);
    FAIL() << "expected a misalignment error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kValue);
  }
  try {
    view_bytes(bytes, 0, Shape{bytes.numel()}, DType::kFloat32);
    FAIL() << "expected an out-of-range error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIndex);
  }
  EXPECT_THROW(map_file(dir / "missing.safetensors"), Error);

  const auto empty = dir / "empty.bin";
  { std::ofstream(empty.string()); }
  Tensor none = map_file(empty);
  EXPECT_EQ(none.numel(), 0);
  EXPECT_FALSE(none.storage()->writable());
}

TEST(ExternalStorage, OwnerLivesUntilTheLastView) {
  auto released = std::make_shared<bool>(false);
  std::shared_ptr<float[]> data(new float[4]{1, 2, 3, 4});
  Tensor view;
  {
    std::shared_ptr<const void> owner(data.get(), [data, released](const void*) { *released = true; });
    Tensor t = Tensor::from_external(data.get(), Shape{4}, DType::kFloat32, std::move(owner), true);
    EXPECT_EQ(t.data_ptr(), data.get());
    view = slice(t, 0, 2, 4);
  }
  EXPECT_FALSE(*released);
  EXPECT_EQ(view.to_vector<float>(), (std::vector<float>{3, 4}));
  // Writable external memory takes in-place updates, and the caller sees them.
  {
    Tensor in[3] = {view, ones_like(view), zeros_like(view)};
    dispatch(OpId::k_sgd_update, in, Attrs{1.0, 0.0, 0.0, 0.0, false, true});
  }
  EXPECT_EQ(data[2], 2.0f);
  view = Tensor();
  EXPECT_TRUE(*released);
}

}  // namespace
}  // namespace spore
