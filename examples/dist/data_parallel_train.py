# Data-parallel training in MindSpore's spelling (issue 31): the same script runs on one process
# or on N, each rank training on its shard of every batch with the gradients averaged.
#   mpirun -np 2 python data_parallel_train.py --batch 8 --out /tmp/dp.ckpt
#   spore launch -n 2 -- python data_parallel_train.py --batch 8 --out /tmp/dp.ckpt
# Two ranks with --batch 8 train the same parameters as one rank with --batch 16 (within float32
# reduction order): tests/python/test_data_parallel_mpirun.py checks it.
# --train-one-step trains through nn.TrainOneStepCell, which adds the gradient reducer by itself
# in DATA_PARALLEL mode; otherwise the loop is value_and_grad + nn.DistributedGradReducer.
import sys

import numpy as np
import spore as ms
import spore.dataset as ds
from spore import nn
from spore.communication import init, get_rank, get_group_size


def option(name, default):
    return type(default)(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


class Digits:
    """256 synthetic 8x8 "digits": a fixed random template per class plus noise (random access,
    so every rank can take its shard by index)."""

    def __init__(self, rows=256, seed=2024):
        rng = np.random.default_rng(seed)
        templates = rng.normal(size=(10, 64)).astype(np.float32)
        self.labels = rng.integers(0, 10, size=rows).astype(np.int64)
        self.images = (templates[self.labels] + 0.5 * rng.normal(size=(rows, 64))).astype(np.float32)

    def __getitem__(self, i):
        return self.images[i], self.labels[i]

    def __len__(self):
        return len(self.labels)


ms.set_context(mode=ms.PYNATIVE_MODE)
init()
ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
rank_id, rank_size = get_rank(), get_group_size()
ms.set_seed(1)
ds.config.set_seed(7)

batch, epochs, out = option("--batch", 16), option("--epochs", 2), option("--out", "")
dataset = ds.GeneratorDataset(Digits(), ["image", "label"], shuffle=True, num_shards=rank_size, shard_id=rank_id)
dataset = dataset.batch(batch, drop_remainder=True)

net = nn.SequentialCell([nn.Dense(64, 32), nn.ReLU(), nn.Dense(32, 10)])
loss_fn = nn.CrossEntropyLoss()
optimizer = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)

if "--train-one-step" in sys.argv:
    train_step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), optimizer)
else:
    def forward_fn(data, label):
        return loss_fn(net(data), label)

    grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)
    grad_reducer = nn.DistributedGradReducer(optimizer.parameters)

    def train_step(data, label):
        loss, grads = grad_fn(data, label)
        grads = grad_reducer(grads)
        optimizer(grads)
        return loss

net.set_train()
for epoch in range(epochs):
    for step, (image, label) in enumerate(dataset.create_tuple_iterator()):
        loss = train_step(image, label)
    print(f"rank {rank_id}/{rank_size} epoch {epoch}: loss {float(loss.asnumpy()):.6f}", flush=True)

if out and rank_id == 0:
    ms.save_checkpoint(net, out)
