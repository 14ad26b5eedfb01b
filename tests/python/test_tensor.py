"""spore.Tensor: construction, NumPy sharing (NOTE [NumPy sharing]), operators, indexing, dtypes,
errors; values against NumPy."""
import gc

import numpy as np
import pytest

import spore as ms
from spore import Tensor, ops


def test_defaults_follow_mindspore():
    assert Tensor(1.0).dtype == ms.float32 and Tensor(1.0).shape == ()
    assert Tensor([1, 2]).dtype == ms.int64
    assert Tensor([True, False]).dtype == ms.bool_
    assert Tensor([[1.0, 2.0]]).dtype == ms.float32
    assert Tensor(np.zeros(3)).dtype == ms.float64  # a NumPy array keeps its dtype
    assert Tensor([1, 2], ms.float16).dtype == ms.float16
    assert Tensor(shape=(2, 3), dtype=ms.int32).asnumpy().tolist() == [[0] * 3] * 2
    assert repr(ms.float32) == "Float32" and str(ms.bfloat16) == "BFloat16"


@pytest.mark.parametrize("np_dtype,dtype", [(np.float16, ms.float16), (np.float32, ms.float32),
                                            (np.float64, ms.float64), (np.int32, ms.int32),
                                            (np.int64, ms.int64), (np.int8, ms.int8), (np.uint8, ms.uint8),
                                            (np.bool_, ms.bool_)])
def test_numpy_round_trip_shares_memory(np_dtype, dtype):
    a = (np.arange(12) % 3).astype(np_dtype).reshape(3, 4)
    t = Tensor(a)
    assert t.dtype == dtype and t.shape == (3, 4)
    back = t.asnumpy()
    assert back.dtype == a.dtype and np.shares_memory(back, a)
    np.testing.assert_array_equal(back, a)


def test_lifetimes_are_kept_by_either_side():
    a = np.arange(6, dtype=np.float32)
    t = Tensor(a)
    del a
    gc.collect()
    np.testing.assert_array_equal(t.asnumpy(), np.arange(6, dtype=np.float32))  # the array lives on in t
    view = (t * 2).asnumpy()
    del t
    gc.collect()
    np.testing.assert_array_equal(view, np.arange(6) * 2)  # the storage lives on in the view


def test_writes_are_seen_both_ways_and_read_only_stays_read_only():
    a = np.zeros(4, np.float32)
    t = Tensor(a)
    a[1] = 5
    assert t.asnumpy()[1] == 5
    t[2] = 7.0
    assert a[2] == 7
    ro = np.ones(3, np.float32)
    ro.flags.writeable = False
    r = Tensor(ro)
    assert not r.asnumpy().flags.writeable
    with pytest.raises(ms.SporeError, match="read"):
        r[0] = 2.0


def test_strided_and_swapped_arrays_are_copied():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = Tensor(a[:, ::2])
    np.testing.assert_array_equal(t.asnumpy(), a[:, ::2])
    assert not np.shares_memory(t.asnumpy(), a)
    b = np.arange(4, dtype=">f4")
    np.testing.assert_array_equal(Tensor(b).asnumpy(), b)
    assert Tensor(a, ms.float64).dtype == ms.float64  # another dtype: a converted copy


def test_bfloat16_round_trips_through_float32_or_ml_dtypes():
    values = np.array([1.0, -2.5, 3.140625, 2.0 ** 33], np.float32)  # all exact in bfloat16
    t = Tensor(values, ms.bfloat16)
    assert t.dtype == ms.bfloat16
    back = t.asnumpy()
    try:
        import ml_dtypes
        assert back.dtype == np.dtype(ml_dtypes.bfloat16)
    except ImportError:
        assert back.dtype == np.float32
    np.testing.assert_array_equal(back.astype(np.float32), values)


def test_buffer_protocol_and_array_interface():
    t = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    m = memoryview(t)
    assert m.shape == (2, 3) and m.format == "f"
    np.testing.assert_array_equal(np.asarray(t), np.arange(6).reshape(2, 3))


RNG = np.random.default_rng(7)
A = RNG.normal(size=(3, 4)).astype(np.float32)
B = RNG.normal(size=(3, 4)).astype(np.float32) + 3


@pytest.mark.parametrize("expr", ["a + b", "a - b", "a * b", "a / b", "a + 2.5", "2.5 - a", "3 / b", "-a",
                                  "abs(a)", "a ** 2", "a @ b.T", "(a < b)", "(a >= 0.5)", "(a == a)"])
def test_operators_match_numpy(expr):
    got = eval(expr, {"a": Tensor(A), "b": Tensor(B)})
    want = eval(expr, {"a": A.astype(np.float64), "b": B.astype(np.float64)})
    np.testing.assert_allclose(got.asnumpy().astype(np.float64), want, rtol=1e-5, atol=1e-5)


def test_scalars_keep_the_tensor_dtype():
    assert (Tensor([1, 2], ms.int32) + 2).dtype == ms.int32
    assert (Tensor([1, 2], ms.float16) * 2.5).dtype == ms.float16
    assert (Tensor([1, 2], ms.int32) * 2.5).dtype == ms.float32


@pytest.mark.parametrize("index", [1, -1, (1, 2), slice(1, None), (slice(None), 2), (Ellipsis, 1), (None, 0),
                                   (slice(0, 3, 2), slice(1, 3)), [2, 0]])
def test_indexing_matches_numpy(index):
    a = np.arange(24, dtype=np.float32).reshape(3, 8)
    np.testing.assert_array_equal(Tensor(a)[index].asnumpy(), a[index])


def test_int_and_slice_indexing_are_views_and_assignment_writes_through():
    t = Tensor(np.zeros((3, 4), np.float32))
    t[1, 1:3] = Tensor([5.0, 6.0])
    t[2] = 1.0
    want = np.zeros((3, 4), np.float32)
    want[1, 1:3] = [5, 6]
    want[2] = 1
    np.testing.assert_array_equal(t.asnumpy(), want)
    assert t[0].shares_memory_with(t)


def test_conversions():
    assert float(Tensor([2.5])) == 2.5 and int(Tensor(7)) == 7 and Tensor([3.0]).item() == 3.0
    assert Tensor([[1, 2]]).tolist() == [[1, 2]]
    assert len(Tensor(np.zeros((5, 2)))) == 5
    assert [float(x) for x in Tensor([1.0, 2.0])] == [1.0, 2.0]


def test_bad_input_raises_typed_errors():
    with pytest.raises(ValueError):  # ragged
        Tensor([[1.0, 2.0], [3.0]])
    with pytest.raises(TypeError, match="no Spore dtype"):
        Tensor(np.zeros(2, np.complex64))
    with pytest.raises(IndexError, match="out of bounds"):
        Tensor([1.0, 2.0])[5]
    with pytest.raises(ms.SporeIndexError):
        Tensor([1.0, 2.0])[0, 0]
    with pytest.raises(IndexError, match="not an index"):
        Tensor([1.0, 2.0])[0.5]
    with pytest.raises(ValueError, match="ambiguous"):
        bool(Tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="dtype"):
        Tensor([1.0], "complex128")
    with pytest.raises(ms.ShapeError, match="matmul"):
        ops.matmul(Tensor(A), Tensor(B))
    with pytest.raises(TypeError):  # pybind: wrong argument types, never a crash
        ops.softmax("not a tensor")
    with pytest.raises(ms.UnsupportedError):
        Tensor(A)[::-1]


def test_set_context():
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU", device_id=0)
    assert ms.get_context("mode") == ms.GRAPH_MODE and ms.get_context("device_target") == "CPU"
    ms.set_context(mode=ms.PYNATIVE_MODE, precision_mode="allow_mix_precision")
    assert ms.get_context("precision_mode") == "allow_mixed"
    ms.set_context(precision_mode="must_keep_origin_dtype")
    with pytest.raises(ValueError):
        ms.set_context(mode=5)
    with pytest.raises(ValueError):
        ms.set_context(no_such_option=1)
    with pytest.raises(ms.DeviceError):
        ms.set_context(device_target="Ascend")
