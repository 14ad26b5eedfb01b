// NOTE [Derived forms]: a read-only storage keeps the forms kernels derive from its bytes, one per
// key, for its own life; a writable one keeps nothing. And the fused convolution, whose weight the
// conv fusion pass makes read-only, gives the same bits with its blocked weights kept as without.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "spore/context.h"
#include "spore/op_registry.h"
#include "spore/ops.h"
#include "spore/tensor.h"
#include "test_util.h"

namespace spore {
namespace {

TEST(DerivedForms, AReadOnlyStorageKeepsOneFormPerKeyUntilItGoes) {
  Tensor t = Tensor::from_vector<float>({1, 2, 3}, Shape{3});
  int made = 0;
  auto make = [&] {
    ++made;
    return std::shared_ptr<const void>(std::make_shared<int>(made));
  };
  // Writable: nothing kept.
  t.storage()->derived("a", make);
  t.storage()->derived("a", make);
  EXPECT_EQ(made, 2);
  t.storage()->make_read_only();
  EXPECT_FALSE(t.storage()->writable());
  const auto a = t.storage()->derived("a", make);
  EXPECT_EQ(made, 3);
  EXPECT_EQ(t.storage()->derived("a", make), a);  // kept
  EXPECT_EQ(made, 3);
  const auto b = t.storage()->derived(std::string("a\0", 2), make);  // keys compare exactly
  EXPECT_NE(b, a);
  EXPECT_EQ(made, 4);
  // Past kMaxDerivedForms, made on each call.
  for (int k = 0; k < Storage::kMaxDerivedForms; ++k) t.storage()->derived("k" + std::to_string(k), make);
  const int before = made;
  t.storage()->derived("k" + std::to_string(Storage::kMaxDerivedForms), make);
  t.storage()->derived("k" + std::to_string(Storage::kMaxDerivedForms), make);
  EXPECT_EQ(made, before + 2);
  // The kept forms go with the storage.
  std::weak_ptr<const void> watch = a;
  t = Tensor();
  EXPECT_FALSE(watch.expired());  // `a` still held here
  std::weak_ptr<const void> only;
  {
    Tensor u = Tensor::from_vector<float>({4}, Shape{1});
    u.storage()->make_read_only();
    only = u.storage()->derived("x", [] { return std::shared_ptr<const void>(std::make_shared<int>(7)); });
    EXPECT_FALSE(only.expired());
  }
  EXPECT_TRUE(only.expired());
}

TEST(DerivedForms, ThreadsAskingAtOnceShareOneForm) {
  Tensor t = Tensor::from_vector<float>({1}, Shape{1});
  t.storage()->make_read_only();
  std::atomic<int> made{0};
  std::vector<std::shared_ptr<const void>> got(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] {
      got[i] = t.storage()->derived("k", [&] {
        ++made;
        return std::shared_ptr<const void>(std::make_shared<int>(1));
      });
    });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(made.load(), 1);
  for (const auto& g : got) EXPECT_EQ(g, got[0]);
}

TEST(DerivedForms, AReadOnlyTensorRefusesWritesByName) {
  Tensor t = Tensor::from_vector<float>({1, 2}, Shape{2});
  t.storage()->make_read_only();
  try {
    t.copy_(Tensor::from_vector<float>({3, 4}, Shape{2}));
    ADD_FAILURE() << "copy_ wrote into read-only memory";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kValue);
    EXPECT_NE(std::string(e.what()).find("read-only"), std::string::npos) << e.what();
  }
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2}));
}

TEST(DerivedForms, AFusedConvolutionKeepingItsBlockedWeightsGivesTheSameBits) {
  // 32 -> 32 channels, 3x3 at 40 x 40: oneDNN's blocked path (NOTE [oneDNN convolution]), at one
  // thread and cut into slabs at two; each prediction twice (the second uses the kept form).
  const Tensor x = random_uniform({1, 32, 40, 40}, 70, -1, 1), w = random_uniform({32, 32, 3, 3}, 71, -0.2, 0.2),
               b = random_uniform({32}, 72, -1, 1);
  Tensor sealed = w.clone();
  sealed.storage()->make_read_only();
  const std::vector<int64_t> one{1, 1};
  const Attrs a = Attrs::of(one, one, one, int64_t{1}, -INFINITY, INFINITY);
  for (int threads : {1, 2}) {
    ContextSettings settings = context();
    settings.num_threads = threads;
    ContextScope scope(settings);
    const Tensor want = dispatch1(OpId::k_fused_conv2d, {x, w, b}, a);
    for (int rep = 0; rep < 2; ++rep)
      EXPECT_EQ(dispatch1(OpId::k_fused_conv2d, {x, sealed, b}, a).to_vector<float>(), want.to_vector<float>())
          << threads << " threads, run " << rep;
  }
}

}  // namespace
}  // namespace spore
