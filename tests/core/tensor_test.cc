// Tensor basics: construction, copy-out, reference counting, shapes, printing, bad input.
#include <gtest/gtest.h>

#include <thread>

#include "backends/cpu/thread_pool.h"
#include "spore/context.h"
#include "spore/ops.h"
#include "spore/tensor.h"

namespace spore {
namespace {

TEST(Tensor, FromVectorAndCopyOut) {
  Tensor t = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.strides(), (Shape{3, 1}));
  EXPECT_EQ(t.dtype(), DType::kFloat32);
  EXPECT_EQ(t.device(), Device::cpu());
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.size(-1), 3);
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Tensor::scalar<int64_t>(42).item<int64_t>(), 42);
  EXPECT_EQ(t.to_bytes().size(), 24u);
}

TEST(Tensor, BadConstructionIsAnError) {
  EXPECT_THROW(Tensor::from_vector<float>({1, 2, 3}, Shape{2, 2}), Error);
  EXPECT_THROW((Shape{2, -1}), Error);
  EXPECT_THROW((Shape{1, 1, 1, 1, 1, 1, 1, 1, 1}), Error);
  Tensor t = Tensor::from_vector<float>({1, 2}, Shape{2});
  EXPECT_THROW(t.item<float>(), Error);
  EXPECT_THROW(t.size(2), Error);
  EXPECT_THROW(t.data<double>(), Error);
  Tensor undefined;
  EXPECT_FALSE(undefined.defined());
  EXPECT_THROW(undefined.shape(), Error);
}

TEST(Tensor, SharingAndLifetime) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, Shape{4});
  Storage* s = a.storage();
  EXPECT_EQ(s->use_count(), 1);
  {
    Tensor v = Tensor::view_of(s, 1, Shape{2}, Shape{2}, DType::kFloat32);  // elements 1 and 3
    EXPECT_EQ(s->use_count(), 2);
    EXPECT_FALSE(v.is_contiguous());
    EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{2, 4}));
    a.data<float>()[3] = 40;
    EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{2, 40}));
  }
  EXPECT_EQ(s->use_count(), 1);
  // A view that would reach past the storage is refused.
  EXPECT_THROW(Tensor::view_of(s, 2, Shape{2}, Shape{2}, DType::kFloat32), Error);
  Tensor moved = std::move(a);
  EXPECT_FALSE(a.defined());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_EQ(moved.numel(), 4);
}

TEST(Tensor, ZeroSizedTensors) {
  Tensor e = Tensor::empty(Shape{0, 3}, DType::kFloat32);
  EXPECT_EQ(e.numel(), 0);
  EXPECT_TRUE(e.to_vector<float>().empty());
}

// NOTE [Shape overflow]: extents other than 0 must multiply within int64 even in an empty shape,
// since its strides are built from them.
TEST(Tensor, EmptyShapeWithOverflowingExtentsIsAShapeError) {
  const Shape bad{3, 0, int64_t{0xC0000000}, int64_t{0x5B000000}};
  for (auto fn : {+[](const Shape& s) { (void)s.numel(); },
                  +[](const Shape& s) { (void)contiguous_strides(s); },
                  +[](const Shape& s) { (void)Tensor::empty(s, DType::kUInt8); }}) {
    try {
      fn(bad);
      ADD_FAILURE() << "no error for " << bad.str();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kShape) << e.what();
    }
  }
  const Shape ok{3, 0, int64_t{1} << 40};
  EXPECT_EQ(ok.numel(), 0);
  EXPECT_EQ(contiguous_strides(ok), (Shape{int64_t{1} << 40, int64_t{1} << 40, 1}));
  EXPECT_EQ((Shape{int64_t{1} << 61, 2}).numel(), int64_t{1} << 62);
  EXPECT_THROW((void)(Shape{int64_t{1} << 62, 2}).numel(), Error);
}

TEST(Tensor, PrintsShapeDtypeAndValues) {
  Tensor t = Tensor::from_vector<float>({1, 2.5f, 3, 4}, Shape{2, 2});
  std::string s = t.str();
  EXPECT_NE(s.find("shape=[2, 2]"), std::string::npos) << s;
  EXPECT_NE(s.find("float32"), std::string::npos);
  EXPECT_NE(s.find("[[1, 2.5],\n [3, 4]]"), std::string::npos) << s;
}

TEST(ThreadPool, CoversTheRangeOnceAndPropagatesErrors) {
  ContextGuard guard;
  set_num_threads(2);
  std::vector<std::atomic<int>> hits(10007);
  cpu::parallel_for(10007, 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[i]++;
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  EXPECT_THROW(cpu::parallel_for(1000, 1, [](int64_t b, int64_t) {
                 if (b > 500) throw Error(ErrorCode::kValue, "boom");
               }),
               Error);
  // Still usable after an error, and from several threads at once.
  std::thread other([] {
    std::atomic<int64_t> total{0};
    cpu::parallel_for(5000, 10, [&](int64_t b, int64_t e) { total += e - b; });
    EXPECT_EQ(total.load(), 5000);
  });
  std::atomic<int64_t> total{0};
  cpu::parallel_for(5000, 10, [&](int64_t b, int64_t e) { total += e - b; });
  other.join();
  EXPECT_EQ(total.load(), 5000);
}

// Callers on several threads take the pool turn by turn with short regions, so a region often
// starts just as the previous one's helpers leave it. Each caller's chunks must reach its own
// function only, exactly once each. Before the pool stayed taken until the last helper had left,
// a new region could be set up under a departing helper: indices were run twice or not at all,
// or a worker called the null function the previous caller had left behind (a segfault).
TEST(ThreadPool, CallersOnManyThreadsEachRunTheirOwnChunksOnce) {
  ContextGuard guard;
  set_num_threads(3);
  constexpr int kCallers = 4, kRegions = 3000;
  constexpr int64_t kN = 48;
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&failures] {
      std::vector<std::atomic<int>> hits(kN);
      for (int r = 0; r < kRegions && failures.load() == 0; ++r) {
        for (auto& h : hits) h.store(0, std::memory_order_relaxed);
        cpu::parallel_for(kN, 1, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1, std::memory_order_relaxed);
        });
        for (auto& h : hits)
          if (h.load(std::memory_order_relaxed) != 1) failures++;
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace spore
