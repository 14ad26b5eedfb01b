"""Checkpoints (save_checkpoint, load_checkpoint, load_param_into_net) and export to Spore IR."""
import json

import numpy as np
import pytest

import spore as ms
import spore_lite as mslite
from spore import Tensor, nn


def make(seed):
    ms.set_seed(seed)
    return nn.SequentialCell([nn.Dense(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dense(8, 3)])


X = np.random.default_rng(1).normal(size=(6, 4)).astype(np.float32)


def test_checkpoint_round_trip_is_exact(tmp_path):
    net = make(1)
    net.set_train(True)
    net(Tensor(X))  # moves the BatchNorm statistics
    net.set_train(False)
    want = net(Tensor(X)).asnumpy()
    ms.save_checkpoint(net, str(tmp_path / "net.ckpt"))
    other = make(2)
    other.set_train(False)
    assert np.abs(other(Tensor(X)).asnumpy() - want).max() > 0
    params = ms.load_checkpoint(str(tmp_path / "net.ckpt"))
    assert set(params) == {"0.weight", "0.bias", "1.gamma", "1.beta", "1.moving_mean", "1.moving_variance",
                           "3.weight", "3.bias"}
    assert ms.load_param_into_net(other, params) == ([], [])
    np.testing.assert_array_equal(other(Tensor(X)).asnumpy(), want)
    raw = (tmp_path / "net.ckpt").read_bytes()  # a safetensors file
    header = json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])
    assert header["__metadata__"]["format"] == "spore-checkpoint"


def test_failed_load_changes_nothing(tmp_path):
    net = make(1)
    before = [p.asnumpy().copy() for p in net.get_parameters()]
    params = {n: p for n, p in net.parameters_and_names()}
    params = {n: Tensor(np.zeros(p.shape, np.float32)) for n, p in params.items()}
    params["3.weight"] = Tensor(np.zeros((2, 8), np.float32))
    with pytest.raises(ms.ShapeError, match="3.weight"):
        ms.load_param_into_net(net, params)
    for b, p in zip(before, net.get_parameters()):
        np.testing.assert_array_equal(p.asnumpy(), b)
    missing, unexpected = ms.load_param_into_net(net, {"0.bias": Tensor(np.ones(8, np.float32)),
                                                       "nope": Tensor([1.0])})
    assert "0.weight" in missing and unexpected == ["nope"]
    np.testing.assert_array_equal(net[0].bias.asnumpy(), np.ones(8))
    with pytest.raises(ValueError, match="missing"):
        ms.load_param_into_net(net, {}, strict_load=True)


def test_load_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(b"not a checkpoint at all")
    with pytest.raises(ms.SporeError, match="bad.ckpt"):
        ms.load_checkpoint(str(bad))
    with pytest.raises(OSError):
        ms.load_checkpoint(str(tmp_path / "missing.ckpt"))


def test_export_runs_in_lite_with_the_same_values(tmp_path):
    net = make(3)
    net.set_train(False)
    path = ms.export(net, Tensor(X), file_name=str(tmp_path / "net"), file_format="MINDIR")
    assert path.endswith(".mindir")
    model = mslite.Model()
    model.build_from_file(path, mslite.ModelType.MINDIR, mslite.Context())
    out = model.predict([X])[0].get_data_to_numpy()
    np.testing.assert_array_equal(out, net(Tensor(X)).asnumpy())
    inputs = model.get_inputs()
    assert inputs[0].shape == (6, 4)
    inputs[0].set_data_from_numpy(X)
    np.testing.assert_array_equal(model.predict(inputs)[0].get_data_to_numpy(), out)
    with pytest.raises(mslite.SporeValueError, match="float32"):
        model.predict([X.astype(np.float64)])


def test_onnx_export_runs_in_lite_with_the_same_values(tmp_path):
    net = make(4)
    net.set_train(False)
    path = ms.export(net, Tensor(X), file_name=str(tmp_path / "net"), file_format="ONNX")
    assert path.endswith(".onnx")
    model = mslite.Model()
    model.build_from_file(path, mslite.ModelType.ONNX, mslite.Context())
    out = model.predict([X])[0].get_data_to_numpy()
    np.testing.assert_allclose(out, net(Tensor(X)).asnumpy(), rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="file_format"):
        ms.export(net, Tensor(X), file_name=str(tmp_path / "net"), file_format="TFLITE")


def test_lite_refuses_bad_files(tmp_path):
    junk = tmp_path / "junk.mindir"
    junk.write_bytes(b"\x08\x01garbage")
    with pytest.raises(mslite.SporeError):
        mslite.Model().build_from_file(str(junk), mslite.ModelType.MINDIR, mslite.Context())
    with pytest.raises(mslite.SporeError):
        mslite.Model().build_from_file(str(tmp_path / "absent.mindir"), mslite.ModelType.MINDIR, mslite.Context())
    with pytest.raises(mslite.SporeValueError, match="build_from_file"):
        mslite.Model().predict([X])
