// The dataset pipeline: generator sources, map (workers, order, errors), shuffle, batch,
// repeat, project and the iterators. References are computed here with plain loops.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "data_test_util.h"

namespace spore::data::test {
namespace {

// A dataset of n rows: "id" int64 0-d = i, "x" float32 [3] = {i, 2i, 3i}.
Dataset counting(int64_t n) {
  return GeneratorDataset(
      [](int64_t i) {
        float f = (float)i;
        return Row{Tensor::scalar<int64_t>(i),
                   Tensor::from_vector<float>({f, 2 * f, 3 * f}, Shape{3})};
      },
      n, {"id", "x"});
}

std::vector<int64_t> ids(const std::vector<Row>& rows, size_t column = 0) {
  std::vector<int64_t> out;
  for (const Row& r : rows)
    for (int64_t v : r[column].to_vector<int64_t>()) out.push_back(v);
  return out;
}

// ---- the chapter's sample 03 ----

// 64 samples of 4 normal features (seeded), y = [sum]; map normalises x; batch 8 dropping the
// remainder: 8 batches of [8, 4], and a rebuilt pipeline gives the same first batch.
Dataset sample03(uint32_t seed, int workers, bool shuffle) {
  auto make_rows = [seed] {
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<std::vector<float>> rows;
    for (int i = 0; i < 64; ++i) {
      std::vector<float> v(4);
      for (float& x : v) x = normal(gen);
      rows.push_back(v);
    }
    return rows;
  };
  GeneratorFactory factory = [make_rows] {
    auto rows = std::make_shared<std::vector<std::vector<float>>>(make_rows());
    auto next = std::make_shared<size_t>(0);
    return GeneratorFn([rows, next]() -> std::optional<Row> {
      if (*next == rows->size()) return std::nullopt;
      const auto& v = (*rows)[(*next)++];
      float sum = v[0] + v[1] + v[2] + v[3];
      return Row{Tensor::from_vector(v, Shape{4}), Tensor::from_vector<float>({sum}, Shape{1})};
    });
  };
  Dataset ds = GeneratorDataset(factory, {"x", "y"});
  ds = ds.map(
      [](const Row& in) {
        std::vector<float> v = in[0].to_vector<float>();
        for (float& x : v) x = (x - 0.5f) / 2.0f;
        return Row{Tensor::from_vector(v, in[0].shape())};
      },
      {"x"}, {"x"}, workers);
  if (shuffle) ds = ds.shuffle(64, seed + 100);
  return ds.batch(8, true);
}

TEST(DataPipeline, Sample03EightBatchesAndSameFirstBatchAfterRebuild) {
  Dataset ds = sample03(0, 1, false);
  std::vector<Row> batches = collect(ds);
  ASSERT_EQ(batches.size(), 8u);
  // Reference: the same normal draws, normalised here.
  std::mt19937 gen(0);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (size_t b = 0; b < batches.size(); ++b) {
    ASSERT_EQ(batches[b].size(), 2u);
    EXPECT_EQ(batches[b][0].shape(), (Shape{8, 4}));
    EXPECT_EQ(batches[b][1].shape(), (Shape{8, 1}));
    EXPECT_EQ(batches[b][0].dtype(), DType::kFloat32);
    std::vector<float> x = batches[b][0].to_vector<float>(), y = batches[b][1].to_vector<float>();
    for (int r = 0; r < 8; ++r) {
      float raw[4], sum = 0;
      for (float& v : raw) v = normal(gen);
      for (int k = 0; k < 4; ++k) EXPECT_EQ(x[r * 4 + k], (raw[k] - 0.5f) / 2.0f);
      sum = raw[0] + raw[1] + raw[2] + raw[3];
      EXPECT_EQ(y[r], sum);
    }
  }
  Row again = *sample03(0, 1, false).create_tuple_iterator().next();
  EXPECT_EQ(again[0].to_bytes(), batches[0][0].to_bytes());
  EXPECT_EQ(again[1].to_bytes(), batches[0][1].to_bytes());
  // With a shuffle too: the same seed gives the same first batch, whatever the worker count.
  Row s1 = *sample03(0, 1, true).create_tuple_iterator().next();
  Row s4 = *sample03(0, 4, true).create_tuple_iterator().next();
  EXPECT_EQ(s1[0].to_bytes(), s4[0].to_bytes());
  EXPECT_NE(s1[0].to_bytes(), batches[0][0].to_bytes());   // it did shuffle
  EXPECT_EQ(sample03(0, 1, true).get_dataset_size(), -1);  // a sequential generator: unknown
}

// ---- map ----

TEST(DataPipeline, MapKeepsInputOrderWhateverTheWorkerCount) {
  // Rows take uneven times, so workers finish out of order.
  auto slow_double = [](const Row& in) {
    int64_t i = in[0].item<int64_t>();
    std::this_thread::sleep_for(std::chrono::microseconds((i * 7919) % 5 * 200));
    return Row{Tensor::scalar<int64_t>(i * 2)};
  };
  for (int workers : {1, 2, 4, 8}) {
    std::vector<Row> rows = collect(counting(40).map(slow_double, {"id"}, {}, workers));
    std::vector<int64_t> got = ids(rows);
    ASSERT_EQ(got.size(), 40u) << workers;
    for (int64_t i = 0; i < 40; ++i) EXPECT_EQ(got[i], 2 * i) << "workers " << workers;
  }
}

TEST(DataPipeline, MapRunsOnSeveralThreads) {
  std::mutex mu;
  std::set<std::thread::id> threads;
  std::atomic<int> running{0}, most{0};
  auto fn = [&](const Row& in) {
    int now = ++running;
    int m = most.load();
    while (now > m && !most.compare_exchange_weak(m, now)) {
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      threads.insert(std::this_thread::get_id());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    --running;
    return in;
  };
  EXPECT_EQ(collect(counting(32).map(fn, {"x"}, {}, 4)).size(), 32u);
  EXPECT_GE(threads.size(), 2u);
  EXPECT_GE(most.load(), 2);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);  // workers, not the iterating thread
}

TEST(DataPipeline, ShuffleMapBatchRepeatIsDeterministicAcrossWorkerCounts) {
  auto build = [](int workers) {
    return counting(50)
        .shuffle(16, 42)
        .map(
            [](const Row& in) {
              std::vector<float> v = in[0].to_vector<float>();
              for (float& x : v) x = x * 0.5f + 1.0f;
              return Row{Tensor::from_vector(v, Shape{3})};
            },
            {"x"}, {"x"}, workers)
        .batch(6, false)
        .repeat(2);
  };
  auto ref = fingerprint(collect(build(1)));
  EXPECT_EQ(build(1).get_dataset_size(), 18);
  for (int workers : {2, 3, 7}) EXPECT_EQ(fingerprint(collect(build(workers))), ref) << workers;
}

TEST(DataPipeline, MapColumnLayoutAndDictIterator) {
  Dataset base = GeneratorDataset(
      [](int64_t i) {
        return Row{Tensor::scalar<int32_t>((int32_t)i), Tensor::scalar<int32_t>(10 + (int32_t)i),
                   Tensor::scalar<int32_t>(20 + (int32_t)i)};
      },
      3, {"a", "b", "c"});
  // One input, two outputs, placed where the input was.
  Dataset split = base.map(
      [](const Row& in) {
        int32_t v = in[0].item<int32_t>();
        return Row{Tensor::scalar<int32_t>(v * 2), Tensor::scalar<double>(v + 0.5)};
      },
      {"b"}, {"b2", "bh"});
  EXPECT_EQ(split.column_names(), (std::vector<std::string>{"a", "b2", "bh", "c"}));
  auto it = split.create_dict_iterator();
  auto row = it.next();
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->at("a").item<int32_t>(), 0);
  EXPECT_EQ(row->at("b2").item<int32_t>(), 20);
  EXPECT_EQ(row->at("bh").item<double>(), 10.5);
  EXPECT_EQ(row->at("c").item<int32_t>(), 20);
  // Two inputs (named out of order) into one output at the first input's position.
  Dataset merged = base.map(
      [](const Row& in) {
        return Row{Tensor::scalar<int32_t>(in[0].item<int32_t>() - in[1].item<int32_t>())};
      },
      {"c", "a"}, {"d"});
  EXPECT_EQ(merged.column_names(), (std::vector<std::string>{"d", "b"}));
  std::vector<Row> rows = collect(merged);
  ASSERT_EQ(rows.size(), 3u);
  for (const Row& r : rows) EXPECT_EQ(r[0].item<int32_t>(), 20);
  EXPECT_EQ(merged.describe(), "generator -> map");
  // project
  std::vector<Row> projected = collect(base.project({"c", "a"}));
  EXPECT_EQ(projected[2][0].item<int32_t>(), 22);
  EXPECT_EQ(projected[2][1].item<int32_t>(), 2);
}

TEST(DataPipeline, MapOfAnUndefinedTensorNamesStageColumnAndRow) {
  auto fn = [](const Row& in) {
    int64_t i = in[0].item<int64_t>();
    return Row{i >= 5 ? Tensor() : in[0]};  // rows 5.. are untyped
  };
  for (int workers : {1, 4}) {
    auto it = counting(12).map(fn, {"id"}, {}, workers).create_tuple_iterator();
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(it.next().has_value());
    expect_error([&] { it.next(); }, ErrorCode::kDType,
                 {"stage 2 'map'", "generator -> map", "column 'id'", "row 5", "undefined Tensor"});
    // The iterator stays failed instead of skipping the bad row.
    expect_error([&] { it.next(); }, ErrorCode::kValue, {"earlier error", "row 5"});
  }
}

TEST(DataPipeline, MapResultsOfTheWrongDtypeOrShapeAreReported) {
  auto as_double = [](const Row& in) {
    return Row{Tensor::scalar<double>((double)in[0].item<int64_t>())};
  };
  ColumnSpec f32;
  f32.dtype = DType::kFloat32;
  expect_error([&] { collect(counting(3).map(as_double, {"id"}, {"v"}, 2, {f32})); },
               ErrorCode::kDType,
               {"stage 2 'map'", "column 'v'", "row 0", "float64", "declared float32"});
  ColumnSpec shape3;
  shape3.shape = std::vector<int64_t>{-1, 3};
  expect_error(
      [&] { collect(counting(3).map([](const Row& in) { return in; }, {"x"}, {}, 1, {shape3})); },
      ErrorCode::kShape, {"column 'x'", "row 0", "[3]", "declared [any, 3]"});
  // No declaration: a column keeps the dtype and rank of its first row.
  auto flip_dtype = [](const Row& in) {
    int64_t i = in[0].item<int64_t>();
    return Row{i == 3 ? Tensor::scalar<int32_t>((int32_t)i) : in[0]};
  };
  expect_error([&] { collect(counting(6).map(flip_dtype, {"id"}, {}, 3)); }, ErrorCode::kDType,
               {"column 'id'", "row 3", "int32", "row 0 gave int64"});
  auto flip_rank = [](const Row& in) {
    return Row{in[0].item<int64_t>() == 2 ? Tensor::from_vector<int64_t>({2}, Shape{1}) : in[0]};
  };
  expect_error([&] { collect(counting(6).map(flip_rank, {"id"})); }, ErrorCode::kShape,
               {"column 'id'", "row 2", "rank 1", "rank 0"});
  auto two_values = [](const Row& in) { return Row{in[0], in[0]}; };
  expect_error([&] { collect(counting(2).map(two_values, {"id"})); }, ErrorCode::kValue,
               {"stage 2 'map'", "returned 2 value(s) for 1 column(s) [id]"});
  auto throws = [](const Row& in) -> Row {
    if (in[0].item<int64_t>() == 4) throw std::runtime_error("bad sample");
    return in;
  };
  expect_error([&] { collect(counting(9).map(throws, {"id"}, {}, 4)); }, ErrorCode::kValue,
               {"stage 2 'map'", "row 4", "bad sample"});
}

TEST(DataPipeline, MapErrorsOfConstruction) {
  auto id = [](const Row& in) { return in; };
  expect_error([&] { counting(3).map(id, {"nope"}); }, ErrorCode::kValue,
               {"stage 2 'map'", "'nope'", "[id, x]"});
  expect_error([&] { counting(3).map(id, {"id"}, {}, 0); }, ErrorCode::kValue,
               {"num_parallel_workers is 0"});
  expect_error([&] { counting(3).map(id, {"id"}, {"x"}); }, ErrorCode::kValue,
               {"'x' appears twice"});
  expect_error([&] { counting(3).map(id, {}); }, ErrorCode::kValue, {"input_columns is empty"});
  expect_error([&] { counting(3).map(MapFn(), {"id"}); }, ErrorCode::kValue,
               {"map function is empty"});
  expect_error(
      [&] {
        counting(3).map(id, {"id"}, {}, 1, {ColumnSpec{}, ColumnSpec{}});
      },
      ErrorCode::kValue, {"2 output spec(s) for 1 output column(s)"});
}

// ---- generator sources ----

TEST(DataPipeline, GeneratorErrorsNameTheGeneratorStage) {
  Dataset short_rows =
      GeneratorDataset([](int64_t) { return Row{Tensor::scalar<float>(1.0f)}; }, 3, {"a", "b"});
  expect_error([&] { collect(short_rows); }, ErrorCode::kValue,
               {"stage 1 'generator'", "row 0", "1 value(s) for 2 column(s) [a, b]"});
  Dataset untyped = GeneratorDataset(
      [](int64_t i) { return Row{i == 2 ? Tensor() : Tensor::scalar<float>(1.0f)}; }, 4, {"a"});
  expect_error([&] { collect(untyped); }, ErrorCode::kDType,
               {"stage 1 'generator'", "column 'a'", "row 2", "undefined"});
  Dataset throws =
      GeneratorDataset([](int64_t i) -> Row { throw std::runtime_error("disk gone"); }, 2, {"a"});
  expect_error([&] { collect(throws); }, ErrorCode::kValue,
               {"stage 1 'generator'", "row 0", "disk gone"});
  expect_error([&] { GeneratorDataset([](int64_t) { return Row{}; }, -1, {"a"}); },
               ErrorCode::kValue, {"num_rows is -1"});
  expect_error(
      [&] {
        GeneratorDataset([](int64_t) { return Row{}; }, 1, {"a", "a"});
      },
      ErrorCode::kValue, {"'a' appears twice"});
  expect_error([&] { GeneratorDataset([](int64_t) { return Row{}; }, 1, {}); }, ErrorCode::kValue,
               {"column_names is empty"});
}

TEST(DataPipeline, SequentialGeneratorRestartsForEveryPass) {
  std::atomic<int> made{0};
  GeneratorFactory factory = [&made] {
    ++made;
    auto i = std::make_shared<int64_t>(0);
    return GeneratorFn([i]() -> std::optional<Row> {
      if (*i == 4) return std::nullopt;
      return Row{Tensor::scalar<int64_t>((*i)++)};
    });
  };
  Dataset ds = GeneratorDataset(factory, {"n"}).repeat(3);
  EXPECT_EQ(ds.get_dataset_size(), -1);
  std::vector<int64_t> got = ids(collect(ds));
  EXPECT_EQ(got, (std::vector<int64_t>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(made.load(), 3);
}

// ---- shuffle ----

TEST(DataPipeline, ShuffleIsASeededPermutation) {
  std::vector<int64_t> plain = ids(collect(counting(30)));
  for (int64_t buffer : {1, 4, 30, 100}) {
    std::vector<int64_t> a = ids(collect(counting(30).shuffle(buffer, 9)));
    std::vector<int64_t> b = ids(collect(counting(30).shuffle(buffer, 9)));
    EXPECT_EQ(a, b) << buffer;
    std::vector<int64_t> sorted = a;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, plain) << buffer;
    if (buffer == 1)
      EXPECT_EQ(a, plain);
    else
      EXPECT_NE(a, plain) << buffer;
  }
  EXPECT_NE(ids(collect(counting(30).shuffle(30, 1))), ids(collect(counting(30).shuffle(30, 2))));
  // A full buffer can put any row first.
  std::set<int64_t> firsts;
  for (uint64_t seed = 0; seed < 300; ++seed)
    firsts.insert(ids(collect(counting(10).shuffle(10, seed)))[0]);
  EXPECT_EQ(firsts.size(), 10u);
  EXPECT_EQ(counting(30).shuffle(4, 1).get_dataset_size(), 30);
  expect_error([] { counting(3).shuffle(0, 1); }, ErrorCode::kValue,
               {"stage 2 'shuffle'", "buffer_size is 0"});
}

TEST(DataPipeline, RepeatReshufflesEachEpochReproducibly) {
  Dataset once = counting(12).shuffle(12, 5);
  Dataset twice = once.repeat(2);
  std::vector<int64_t> a = ids(collect(twice));
  ASSERT_EQ(a.size(), 24u);
  std::vector<int64_t> first(a.begin(), a.begin() + 12), second(a.begin() + 12, a.end());
  EXPECT_EQ(first, ids(collect(once)));  // epoch 0 is the shuffle as given
  EXPECT_NE(first, second);
  std::sort(second.begin(), second.end());
  EXPECT_EQ(second, ids(collect(counting(12))));
  EXPECT_EQ(ids(collect(twice)), a);
}

// ---- batch ----

TEST(DataPipeline, BatchKeepsOrDropsTheRemainder) {
  std::vector<Row> kept = collect(counting(10).batch(4));
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[2][0].shape(), (Shape{2}));
  EXPECT_EQ(kept[2][1].shape(), (Shape{2, 3}));
  EXPECT_EQ(kept[2][0].to_vector<int64_t>(), (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(kept[1][1].to_vector<float>(),
            (std::vector<float>{4, 8, 12, 5, 10, 15, 6, 12, 18, 7, 14, 21}));
  EXPECT_EQ(counting(10).batch(4).get_dataset_size(), 3);
  EXPECT_EQ(collect(counting(10).batch(4, true)).size(), 2u);
  EXPECT_EQ(counting(10).batch(4, true).get_dataset_size(), 2);
  EXPECT_EQ(collect(counting(0).batch(4)).size(), 0u);
  EXPECT_EQ(collect(counting(3).batch(4, true)).size(), 0u);
  // Batching batches adds another axis.
  EXPECT_EQ(collect(counting(8).batch(2).batch(2))[0][1].shape(), (Shape{2, 2, 3}));
  expect_error([] { counting(3).batch(0); }, ErrorCode::kValue,
               {"stage 2 'batch'", "batch_size is 0"});
}

TEST(DataPipeline, BatchStacksEveryDtypeAndStridedViews) {
  for (DType dt : kAllDTypes) {
    const size_t item = dtype_size(dt);
    // Row i: a [2, 3] view of a [3, 2] buffer (a transpose), bytes made from i.
    Dataset ds = GeneratorDataset(
        [dt, item](int64_t i) {
          std::vector<uint8_t> bytes(6 * item);
          for (size_t k = 0; k < bytes.size(); ++k)
            bytes[k] = (uint8_t)((i * 31 + (int64_t)k * 7) % 61);
          if (dt == DType::kBool)
            for (auto& b : bytes) b &= 1;
          Tensor base = Tensor::from_bytes(bytes.data(), Shape{3, 2}, dt, Device::cpu());
          return Row{Tensor::view_of(base.storage(), 0, Shape{2, 3}, Shape{1, 2}, dt)};
        },
        5, {"v"});
    std::vector<Row> batches = collect(ds.batch(5));
    ASSERT_EQ(batches.size(), 1u);
    const Tensor& b = batches[0][0];
    EXPECT_EQ(b.shape(), (Shape{5, 2, 3})) << dtype_name(dt);
    EXPECT_EQ(b.dtype(), dt);
    std::vector<uint8_t> got = b.to_bytes();
    for (int64_t i = 0; i < 5; ++i)
      for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 3; ++c) {
          size_t src =
              (size_t)(c * 2 + r);  // element (r, c) of the transpose is (c, r) of the base
          size_t dst = (size_t)((i * 2 + r) * 3 + c);
          for (size_t k = 0; k < item; ++k) {
            uint8_t want = (uint8_t)((i * 31 + (int64_t)(src * item + k) * 7) % 61);
            if (dt == DType::kBool) want &= 1;
            ASSERT_EQ(got[dst * item + k], want) << dtype_name(dt) << " row " << i;
          }
        }
  }
}

TEST(DataPipeline, BatchOfUnequalShapesNamesColumnRowsAndShapes) {
  Dataset ragged = GeneratorDataset(
      [](int64_t i) {
        std::vector<float> v((size_t)(i == 6 ? 4 : 3), 1.0f);
        return Row{Tensor::from_vector(v, Shape{(int64_t)v.size()})};
      },
      8, {"seq"});
  auto it = ragged.batch(4).create_tuple_iterator();
  ASSERT_TRUE(it.next().has_value());
  expect_error([&] { it.next(); }, ErrorCode::kShape,
               {"stage 2 'batch'", "column 'seq'", "batch 1", "row 2 of the batch",
                "row 6 of the input", "[4]", "[3]"});
}

// ---- repeat and iterators ----

TEST(DataPipeline, RepeatCountsAndEndlessRepeat) {
  EXPECT_EQ(ids(collect(counting(3).repeat(3))), (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(counting(3).repeat(3).get_dataset_size(), 9);
  EXPECT_EQ(collect(counting(3).repeat(0)).size(), 0u);
  Dataset endless = counting(4).repeat();
  EXPECT_EQ(endless.get_dataset_size(), -1);
  auto it = endless.create_tuple_iterator();
  for (int i = 0; i < 25; ++i) {
    auto r = it.next();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ((*r)[0].item<int64_t>(), i % 4);
  }
  // An endless repeat of nothing ends instead of spinning.
  EXPECT_EQ(collect(counting(0).repeat()).size(), 0u);
}

TEST(DataPipeline, IteratorsArePassesFromTheStart) {
  Dataset ds = counting(5).map([](const Row& in) { return in; }, {"x"}, {}, 3);
  int64_t expect = 0;
  auto it = ds.create_tuple_iterator();
  for (const Row& r : it) EXPECT_EQ(r[0].item<int64_t>(), expect++);
  EXPECT_EQ(expect, 5);
  EXPECT_FALSE(it.next().has_value());  // stays at the end
  EXPECT_EQ(ids(collect(ds)), ids(collect(ds)));
  // Dropping an iterator in the middle of a pass stops its workers cleanly.
  for (int k = 0; k < 20; ++k) {
    auto partial =
        counting(100).map([](const Row& in) { return in; }, {"x"}, {}, 4).create_tuple_iterator();
    partial.next();
  }
  EXPECT_EQ(ds.get_dataset_size(), 5);
  EXPECT_EQ(ds.create_dict_iterator().column_names(), (std::vector<std::string>{"id", "x"}));
}

TEST(DataPipeline, UpstreamErrorsSurfaceAfterTheRowsBeforeThem) {
  // The generator fails at row 6; a 4-worker map must first hand on rows 0..5.
  Dataset ds = GeneratorDataset(
                   [](int64_t i) -> Row {
                     if (i == 6) throw Error(ErrorCode::kIO, "sample 6 unreadable");
                     return Row{Tensor::scalar<int64_t>(i)};
                   },
                   10, {"n"})
                   .map([](const Row& in) { return in; }, {"n"}, {}, 4);
  auto it = ds.create_tuple_iterator();
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ((*it.next())[0].item<int64_t>(), i);
  expect_error([&] { it.next(); }, ErrorCode::kIO,
               {"stage 1 'generator'", "row 6", "sample 6 unreadable"});
}

}  // namespace
}  // namespace spore::data::test
