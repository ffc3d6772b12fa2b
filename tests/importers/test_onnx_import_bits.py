"""ONNX bit manipulation (BitShift, BitwiseAnd/Or/Xor/Not, BitCast): imported as integer
and float arithmetic and run against onnxruntime, or, for what is newer than it, the onnx
reference evaluator (NumPy's own shifts and views)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import_math import ELEMENT, run_imported, samples, same_as_onnx  # noqa: E402
from test_onnx_import_ops import make_model  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402

INTEGERS = [np.int8, np.uint8, np.int32, np.uint32, np.int64]


def _integers(dtype, seed: int) -> np.ndarray:
    info = np.iinfo(dtype)
    values = np.random.default_rng(seed).integers(info.min, info.max, (3, 8), dtype=dtype, endpoint=True)
    values[0, :3] = [info.min, info.max, 0]
    return values


@pytest.mark.parametrize("dtype", INTEGERS)
@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
def test_bitwise_binary(op, dtype):
    same_as_onnx(op, {"a": _integers(dtype, 1), "b": _integers(dtype, 2)}, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", INTEGERS)
def test_bitwise_not(dtype):
    same_as_onnx("BitwiseNot", {"a": _integers(dtype, 1)}, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint32])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bit_shift_of_unsigned_matches_onnxruntime(direction, dtype):
    a = _integers(dtype, 1)
    shift = np.random.default_rng(4).integers(0, np.iinfo(dtype).bits, a.shape).astype(dtype)
    same_as_onnx("BitShift", {"a": a, "s": shift}, opset=17, rtol=0, atol=0, direction=direction)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bit_shift_of_signed_and_out_of_range_shifts(direction, dtype):
    """Opset 28 shifts signed types (arithmetically to the right), and a shift outside
    [0, width) gives 0 (or -1 for a negative value shifted right)."""
    a = _integers(dtype, 1)
    width = np.iinfo(dtype).bits
    shift = np.random.default_rng(5).integers(-2, width + 2, a.shape).astype(dtype)
    shift[0, :4] = [width - 1, width, -1, 0]
    same_as_onnx("BitShift", {"a": a, "s": shift}, opset=28, reference=True, rtol=0, atol=0, direction=direction)


def test_bitwise_of_floats_is_refused():
    with pytest.raises(UnsupportedModel, match="BitwiseAnd of f32 tensors"):
        same_as_onnx("BitwiseAnd", {"a": samples(), "b": samples()})


# --- BitCast -----------------------------------------------------------------------------
SPECIAL = [0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan]


def _float_patterns(dtype) -> np.ndarray:
    """Special values, the extremes of each range (subnormals too) and random bit patterns
    (NaNs among them made the quiet NaN, whose payload arithmetic cannot keep)."""
    info = np.finfo(dtype)
    edges = [info.max, -info.max, info.tiny, -info.tiny, info.smallest_subnormal, -info.smallest_subnormal,
             info.tiny * 0.75, info.eps, 1 + info.eps]
    unsigned = {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dtype).itemsize]
    random = np.random.default_rng(6).integers(0, np.iinfo(unsigned).max, 200, dtype=unsigned, endpoint=True)
    values = np.concatenate([np.array(SPECIAL + edges, dtype), random.view(dtype)])
    return np.where(np.isnan(values), np.array(np.nan, dtype), values)


INTEGER_OF = {np.float32: (np.int32, TensorProto.INT32), np.float64: (np.int64, TensorProto.INT64),
              np.float16: (np.int16, TensorProto.INT16)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_bitcast_of_floats_to_integers_and_back_is_exact(dtype):
    values = _float_patterns(dtype)[None]
    integer, code = INTEGER_OF[dtype]
    forward = make_model([helper.make_node("BitCast", ["x"], ["y"], to=code)],
                         [("x", ELEMENT[np.dtype(dtype)], list(values.shape))], [("y", code, None)], opset=26)
    (bits,) = run_imported(forward, {"x": values})
    assert bits.dtype == integer and np.array_equal(bits, values.view(integer))
    backward = make_model([helper.make_node("BitCast", ["x"], ["y"], to=ELEMENT[np.dtype(dtype)])],
                          [("x", code, list(values.shape))], [("y", ELEMENT[np.dtype(dtype)], None)], opset=26)
    (again,) = run_imported(backward, {"x": bits})
    assert np.array_equal(again.view(integer), values.view(integer))


def test_bitcast_between_integers_and_from_bool():
    for source, target, code in ((np.int8, np.uint8, TensorProto.UINT8), (np.uint32, np.int32, TensorProto.INT32),
                                 (np.int32, np.uint32, TensorProto.UINT32), (np.bool_, np.uint8, TensorProto.UINT8)):
        values = _integers(source, 3) if source is not np.bool_ else np.array([[True, False, True]])
        model = make_model([helper.make_node("BitCast", ["x"], ["y"], to=code)],
                           [("x", ELEMENT[np.dtype(source)], list(values.shape))], [("y", code, None)], opset=26)
        (got,) = run_imported(model, {"x": values})
        assert got.dtype == target and np.array_equal(got, values.view(target))


def test_bitcast_between_half_precision_floats():
    values = _float_patterns(np.float16)[None]
    model = make_model([helper.make_node("BitCast", ["x"], ["y"], to=TensorProto.BFLOAT16)],
                       [("x", TensorProto.FLOAT16, list(values.shape))], [("y", TensorProto.BFLOAT16, None)], opset=26)
    (got,) = run_imported(model, {"x": values})  # bf16 is held as f32: its top 16 bits
    expected = (values.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    finite = ~np.isnan(expected)
    assert np.array_equal(got[finite], expected[finite]) and np.isnan(got[~finite]).all()


def test_bitcast_between_widths_is_refused():
    model = make_model([helper.make_node("BitCast", ["x"], ["y"], to=TensorProto.INT64)],
                       [("x", TensorProto.FLOAT, [1, 3])], [("y", TensorProto.INT64, None)], opset=26)
    with pytest.raises(UnsupportedModel, match="BitCast from f32 to i64"):
        import_onnx(model)
