# Chapter 5.6, "GeneratorDataset 的组织方式", as printed; only the import changed. The lines after
# the snippet count the batches as the chapter's samples/chapter5/03_dataset_pipeline.py does.
import numpy as np
from spore.dataset import GeneratorDataset


def gen():
    rng = np.random.default_rng(0)
    for _ in range(64):
        vector = rng.normal(size=(4,)).astype(np.float32)
        yield vector, np.asarray([vector.sum()], dtype=np.float32)


def normalize(vector):
    return ((vector - np.float32(0.5)) / np.float32(2.0)).astype(np.float32)


dataset = (
    GeneratorDataset(gen(), column_names=["x", "y"], num_parallel_workers=1)
    .map(
        operations=normalize,
        input_columns=["x"],
        output_columns=["x"],
        num_parallel_workers=1,
        python_multiprocessing=False,
    )
    .batch(8, drop_remainder=True)
)

batches = [batch for batch in dataset.create_dict_iterator(output_numpy=True)]
print(f"{len(batches)} batches, shape {list(batches[0]['x'].shape)}")
