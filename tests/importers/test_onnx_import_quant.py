"""ONNX linear quantization (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
MatMulInteger, QLinearMatMul): per tensor, per axis and blocked, imported and run against
onnxruntime (the onnx reference evaluator where onnxruntime lacks a type)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import_math import ELEMENT, expected_outputs, run_imported  # noqa: E402
from test_onnx_import_ops import make_model  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402

F = TensorProto.FLOAT


def same_as_onnx(model, feeds, reference=False, rtol=0.0, atol=0.0, bindings=None):
    got, want = run_imported(model, feeds, bindings), expected_outputs(model, feeds, reference)
    for have, expected in zip(got, want):
        assert have.shape == expected.shape and have.dtype == expected.dtype
        np.testing.assert_allclose(have.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol)
    return got


def scaled(*shape, seed=0) -> np.ndarray:
    """Values whose ratios to the scales below land on halves too (ties round to even)."""
    rng = np.random.default_rng(seed)
    return (rng.integers(-400, 400, shape) / 2).astype(np.float32)


PARAMETERS = {  # layout -> (scale, zero point) for x of shape [1, 2, 4, 6] (a unit batch broadcasts)
    "tensor": (np.array(2.0, np.float32), np.array(7)),
    "axis": (np.array([0.5, 1.0, 2.0, 4.0], np.float32), np.array([1, 2, 3, 4])),
    "blocked": (np.linspace(0.5, 3.0, 24, dtype=np.float32).reshape(1, 2, 4, 3),
                np.arange(24).reshape(1, 2, 4, 3) % 5),
}


@pytest.mark.parametrize("zero_type", [np.uint8, np.int8, None])
@pytest.mark.parametrize("layout", ["tensor", "axis", "blocked"])
def test_quantize_and_dequantize(layout, zero_type):
    scale, zero = PARAMETERS[layout]
    attributes = {"axis": 3, "block_size": 2} if layout == "blocked" else {"axis": 2}
    initializers = [("scale", scale)] + ([("zero", zero.astype(zero_type))] if zero_type else [])
    inputs = ["x", "scale"] + (["zero"] if zero_type else [])
    quantize = make_model([helper.make_node("QuantizeLinear", inputs, ["y"], **attributes)], [("x", F, [1, 2, 4, 6])],
                          [("y", ELEMENT[np.dtype(zero_type or np.uint8)], None)], initializers, opset=21)
    x = scaled(1, 2, 4, 6)
    (quantized,) = same_as_onnx(quantize, {"x": x}, bindings={"B": 1})
    dequantize = make_model([helper.make_node("DequantizeLinear", inputs, ["y"], **attributes)],
                            [("x", ELEMENT[quantized.dtype], [1, 2, 4, 6])], [("y", F, None)], initializers, opset=21)
    same_as_onnx(dequantize, {"x": quantized}, bindings={"B": 1})


def test_quantize_of_a_vector_ignores_the_axis_for_a_per_tensor_scale():
    model = make_model([helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["y"])], [("x", F, [8])],
                       [("y", TensorProto.INT8, None)],
                       [("scale", np.array(0.5, np.float32)), ("zero", np.array(-3, np.int8))], opset=13)
    same_as_onnx(model, {"x": scaled(8)}, bindings={"B": 8})


def test_quantize_to_int16_via_output_dtype():
    model = make_model([helper.make_node("QuantizeLinear", ["x", "scale"], ["y"], output_dtype=TensorProto.INT16)],
                       [("x", F, [3, 4])], [("y", TensorProto.INT16, None)], [("scale", np.array(0.01, np.float32))],
                       opset=21)
    same_as_onnx(model, {"x": scaled(3, 4) * 3}, reference=True, bindings={"B": 3})


def test_dynamic_quantize():
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "scale", "zero"])
    model = make_model([node], [("x", F, [3, 5])],
                       [("y", TensorProto.UINT8, None), ("scale", F, None), ("zero", TensorProto.UINT8, None)], opset=11)
    for shift in (0.0, 5.0, -5.0):  # the range spans 0, or is widened to reach it
        same_as_onnx(model, {"x": scaled(3, 5) / 50 + shift}, rtol=1e-6, atol=1, bindings={"B": 3})


@pytest.mark.parametrize("per_row", [False, True])
def test_matmul_integer(per_row):
    """A 1-D zero point of A is per row (the spec's [M] vector; onnxruntime and the reference
    evaluator take only one element, so that case is checked against NumPy)."""
    a_zero = np.array([3, 5, 7], np.uint8) if per_row else np.array(12, np.uint8)
    b_zero = np.array([1, 9], np.uint8)
    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
    model = make_model([node], [("a", TensorProto.UINT8, [1, 3, 4]), ("b", TensorProto.UINT8, [4, 2])],
                       [("y", TensorProto.INT32, None)], [("az", a_zero), ("bz", b_zero)], opset=10)
    rng = np.random.default_rng(1)
    feeds = {"a": rng.integers(0, 255, (1, 3, 4), dtype=np.uint8), "b": rng.integers(0, 255, (4, 2), dtype=np.uint8)}
    if not per_row:
        same_as_onnx(model, feeds, bindings={"B": 1})
        return
    (got,) = run_imported(model, feeds, {"B": 1})
    expected = (feeds["a"].astype(np.int32) - a_zero.reshape(3, 1)) @ (feeds["b"].astype(np.int32) - b_zero)
    assert got.dtype == np.int32 and np.array_equal(got, expected)


@pytest.mark.parametrize("scale_type", [np.float32, np.float16])
@pytest.mark.parametrize("quantized", [np.uint8, np.int8])
def test_qlinear_matmul(quantized, scale_type):
    info = np.iinfo(quantized)
    rng = np.random.default_rng(2)
    scales = {name: np.array([value], scale_type) for name, value in (("as", 0.0066), ("bs", 0.00705), ("ys", 0.0107))}
    zeros = {name: np.array([value], quantized) for name, value in (("az", 13), ("bz", -14 if info.min else 114),
                                                                    ("yz", 18))}
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    element = ELEMENT[np.dtype(quantized)]
    model = make_model([node], [("a", element, [2, 3, 4]), ("b", element, [2, 4, 5])], [("y", element, None)],
                       list(scales.items()) + list(zeros.items()), opset=21)
    feeds = {"a": rng.integers(info.min, info.max, (2, 3, 4)).astype(quantized),
             "b": rng.integers(info.min, info.max, (2, 4, 5)).astype(quantized)}
    same_as_onnx(model, feeds, atol=1, bindings={"B": 2})  # onnxruntime's fixed-point rounding may differ by 1
    same_as_onnx(model, feeds, reference=True, bindings={"B": 2})


def test_quantize_to_a_type_the_ir_lacks_is_refused():
    model = make_model([helper.make_node("QuantizeLinear", ["x", "scale"], ["y"], output_dtype=TensorProto.INT4)],
                       [("x", F, [3, 4])], [("y", TensorProto.INT4, None)], [("scale", np.array(0.5, np.float32))],
                       opset=21)
    with pytest.raises(UnsupportedModel, match="QuantizeLinear's output_dtype has ONNX element type INT4"):
        import_onnx(model)
