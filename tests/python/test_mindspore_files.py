"""MindSpore's own files from Python (NOTE [MindIR], NOTE [MindSpore checkpoints]): MindSpore
2.10's .ckpt read by spore.load_checkpoint and written back byte for byte with
save_checkpoint(format="mindspore"); its MindIR run by spore_lite with MindSpore's outputs.
Fixtures: tests/fixtures/mindir (tools/make_mindspore_fixtures.py, the real MindSpore)."""
import hashlib
import os

import numpy as np
import pytest

import spore as ms
import spore_lite as mslite

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "mindir")


def fix(name):
    return os.path.join(FIX, name)


def test_chapters_checkpoint_loads_and_writes_back_byte_for_byte(tmp_path):
    raw = open(fix("fp16_linear.ckpt"), "rb").read()
    assert len(raw) == 60 and hashlib.sha256(raw).hexdigest().startswith("ca20a69f")
    params = ms.load_checkpoint(fix("fp16_linear.ckpt"))
    assert list(params) == ["weight", "bias"]
    w = params["weight"].asnumpy()
    assert w.dtype == np.float16 and w.shape == (4, 1)
    # MindSpore's output for its input: x @ weight + bias, in float16 as MindSpore computed it.
    x = np.load(fix("fp16_linear.in0.npy"))
    want = np.load(fix("fp16_linear.out0.npy"))
    got = (x.astype(np.float32) @ w.astype(np.float32) + params["bias"].asnumpy().astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(got, want)
    ms.save_checkpoint(params, str(tmp_path / "again.ckpt"), format="mindspore")
    assert open(tmp_path / "again.ckpt", "rb").read() == raw
    with pytest.raises(ValueError, match="format"):
        ms.save_checkpoint(params, str(tmp_path / "x.ckpt"), format="pickle")


def test_spores_own_checkpoints_still_load(tmp_path):
    ms.save_checkpoint({"a": np.arange(3, dtype=np.float32)}, str(tmp_path / "own.ckpt"))
    assert open(tmp_path / "own.ckpt", "rb").read(9)[8:9] == b"{"  # safetensors
    np.testing.assert_array_equal(ms.load_checkpoint(str(tmp_path / "own.ckpt"))["a"].asnumpy(), [0, 1, 2])


@pytest.mark.parametrize("name", ["mlp", "cnn", "misc", "addnet", "fp16_linear"])
def test_mindspores_mindir_runs_in_spore_lite(name):
    model = mslite.Model()
    model.build_from_file(fix(name + ".mindir"), mslite.ModelType.MINDIR, mslite.Context())
    n = len(model.get_inputs())
    out = model.predict([np.load(fix(f"{name}.in{i}.npy")) for i in range(n)])[0].get_data_to_numpy()
    np.testing.assert_allclose(out.astype(np.float64), np.load(fix(name + ".out0.npy")).astype(np.float64), rtol=0, atol=1e-6)


def test_newer_mindir_is_refused_with_the_chapters_message():
    with pytest.raises(mslite.VersionError, match="maximum mind ir version: 3.*mind ir version: 4"):
        mslite.Model().build_from_file(fix("fp16_linear.v4.mindir"), mslite.ModelType.MINDIR, mslite.Context())
