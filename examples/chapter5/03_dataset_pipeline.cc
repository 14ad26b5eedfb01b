// Sample 03_dataset_pipeline (chapter 5.6): 64 samples of 4 features through a generator source,
// batch 8: 8 batches of shape [8, 4] whose values are the rows in order; with shuffle(seed), a
// rebuilt pipeline gives the same first batch. Values are read back and compared, since the
// chapter's shape-only check could not tell a right batch from a wrong one.
#include "spore/data.h"
#include "spore/probe.h"

namespace {
using namespace spore;

data::Dataset make(bool shuffled) {
  data::Dataset ds = data::GeneratorDataset(
      [](int64_t i) {
        std::vector<float> f(4);
        for (int k = 0; k < 4; ++k) f[k] = (float)(i * 4 + k);
        return data::Row{Tensor::from_vector(f, Shape{4}), Tensor::scalar<int32_t>((int32_t)(i % 3))};
      },
      64, {"features", "label"});
  if (shuffled) ds = ds.shuffle(64, 2026);
  return ds.batch(8, /*drop_remainder=*/true);
}

void dataset_pipeline(probe::ProbeContext& ctx) {
  int batches = 0;
  auto it = make(false).create_tuple_iterator();
  while (auto row = it.next()) {
    const Tensor& f = (*row)[0];
    ctx.shape("batch " + std::to_string(batches), f.shape());
    if (f.shape() != Shape{8, 4}) ctx.fail("batch " + std::to_string(batches) + " has shape " + f.shape().str());
    std::vector<double> want(32);
    for (int i = 0; i < 32; ++i) want[i] = batches * 32 + i;
    ctx.compare("batch " + std::to_string(batches) + " values", f, want, 0);
    ++batches;
  }
  ctx.value("batches", batches);
  if (batches != 8) ctx.fail("expected 8 batches, got " + std::to_string(batches));

  auto first = make(true).create_tuple_iterator().next();
  auto again = make(true).create_tuple_iterator().next();
  if (!first || !again) ctx.fail("the shuffled pipeline yielded no batch");
  ctx.compare("shuffled first batch after rebuilding with the same seed", (*again)[0],
              probe::host_values((*first)[0]), 0);
}
}  // namespace

SPORE_REGISTER_PROBE({"03_dataset_pipeline", "sample",
                      "64 samples, batch 8 -> 8 batches [8,4] with the right values; same first batch after a rebuild with the same seed",
                      "", &dataset_pipeline});
