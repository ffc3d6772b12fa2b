"""The ONNX importer's quantization ops (onnx_quant, onnx_qconv), each run against onnxruntime on
inputs that reach the rounding ties and both saturation bounds."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

from onnx_models import run_onnxruntime  # noqa: E402
from test_onnx_import_ops import make_model as model_of  # noqa: E402
from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402

F, F16, U8, I8, I32 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32


def make_model(nodes, inputs, outputs, initializers=(), opset=21):
    return model_of(nodes, inputs, outputs, initializers, opset)


def check(model, feeds: dict, atol=0.0, reference=False):
    """Import `model`; its outputs on `feeds` must equal onnxruntime's (exactly, unless
    `atol` allows more), or ONNX's reference implementation's where onnxruntime lacks the
    case (per-row and per-channel zero points)."""
    imported = import_onnx(model)
    if reference:
        from onnx.reference import ReferenceEvaluator

        want = ReferenceEvaluator(model).run(None, feeds)
    else:
        want = run_onnxruntime(model, feeds)
    got = interpret(imported.graph, {imported.inputs[name]: array for name, array in feeds.items()},
                    dict(imported.params))
    for (name, value), expected in zip(imported.outputs.items(), want):
        have = got[value]
        assert have.dtype == expected.dtype, (name, have.dtype, expected.dtype)
        np.testing.assert_allclose(have.astype(np.float64), expected.astype(np.float64), atol=atol, rtol=0,
                                   err_msg=name)
    return imported


def ties(*shape, seed=0):
    """Floats on a grid of halves (rounding ties), spread wide enough to saturate."""
    return (np.random.default_rng(seed).integers(-700, 700, shape) / 2).astype(np.float32)


def op_types(imported) -> set[str]:
    return {imported.graph.op(name) for name in imported.graph.ops()}


# --- QuantizeLinear / DequantizeLinear --------------------------------------------------
@pytest.mark.parametrize("zero_type, zero", [(U8, np.uint8(3)), (I8, np.int8(-2))])
def test_quantize_per_tensor_rounds_half_to_even_and_saturates(zero_type, zero):
    node = helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["y"])
    model = make_model([node], [("x", F, [4, 6])], [("y", zero_type, [4, 6])],
                       [("scale", np.float32(0.5)), ("zero", zero)])
    imported = check(model, {"x": ties(4, 6)})
    assert "cast" in op_types(imported)


def test_quantize_per_axis_and_without_zero_point():
    per_axis = helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["y"], axis=0)
    plain = helper.make_node("QuantizeLinear", ["x", "one"], ["z"])
    model = make_model([per_axis, plain], [("x", F, [3, 5])], [("y", I8, [3, 5]), ("z", U8, [3, 5])],
                       [("scale", np.array([0.5, 1.0, 2.0], np.float32)), ("zero", np.array([0, 5, -5], np.int8)),
                        ("one", np.float32(1.0))])
    check(model, {"x": ties(3, 5, seed=1)})


def test_quantize_blocked_with_runtime_scale_and_zero_point():
    node = helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["y"], axis=1, block_size=2)
    model = make_model([node], [("x", F, [2, 5]), ("scale", F, [2, 3]), ("zero", U8, [2, 3])], [("y", U8, [2, 5])])
    feeds = {"x": ties(2, 5, seed=2), "scale": np.array([[0.5, 1, 2], [4, 0.25, 1]], np.float32),
             "zero": np.array([[0, 10, 128], [255, 3, 7]], np.uint8)}
    check(model, feeds)


def test_quantize_output_dtype_and_f16_scale():
    node = helper.make_node("QuantizeLinear", ["x", "scale"], ["y"], output_dtype=I8)
    model = make_model([node], [("x", F16, [8])], [("y", I8, [8])], [("scale", np.float16(0.25))])
    check(model, {"x": ties(8, seed=3).astype(np.float16) / 8})


def test_dequantize_per_tensor_per_axis_blocked_and_i32():
    nodes = [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["a"]),
             helper.make_node("DequantizeLinear", ["q", "axis_s", "axis_z"], ["b"], axis=0),
             helper.make_node("DequantizeLinear", ["q", "block_s", "block_z"], ["c"], axis=1, block_size=3),
             helper.make_node("DequantizeLinear", ["w", "s"], ["d"])]
    initializers = [("s", np.float32(0.125)), ("z", np.uint8(128)), ("axis_s", np.array([0.5, 2], np.float32)),
                    ("axis_z", np.array([1, 200], np.uint8)), ("block_s", np.array([[1, 3], [0.5, 0.25]], np.float32)),
                    ("block_z", np.array([[0, 9], [255, 4]], np.uint8))]
    model = make_model(nodes, [("q", U8, [2, 5]), ("w", I32, [3])],
                       [("a", F, [2, 5]), ("b", F, [2, 5]), ("c", F, [2, 5]), ("d", F, [3])], initializers)
    rng = np.random.default_rng(4)
    check(model, {"q": rng.integers(0, 256, (2, 5)).astype(np.uint8),
                  "w": np.array([-70000, 3, 123456], np.int32)})


def test_dequantize_to_f16_output_dtype():
    node = helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], output_dtype=F16)
    model = make_model([node], [("q", I8, [6])], [("y", F16, [6])], [("s", np.float32(0.1)), ("z", np.int8(-3))],
                       opset=23)
    check(model, {"q": np.array([-128, -3, 0, 1, 100, 127], np.int8)})


def test_dynamic_quantize_matches_onnxruntime():
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "scale", "zero"])
    model = make_model([node], [("x", F, [3, 4])], [("y", U8, [3, 4]), ("scale", F, []), ("zero", U8, [])])
    rng = np.random.default_rng(5)
    for x in (rng.standard_normal((3, 4)).astype(np.float32), np.abs(rng.standard_normal((3, 4))).astype(np.float32),
              -np.abs(rng.standard_normal((3, 4))).astype(np.float32), np.zeros((3, 4), np.float32)):
        check(model, {"x": x}, atol=1e-9)


# --- integer products --------------------------------------------------------------------
def test_matmul_integer_with_per_row_and_per_column_zero_points():
    """A 1-D zero point of A is per row (the spec; onnxruntime and ONNX's reference take
    only scalars there), so the expectation is computed here."""
    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
    az, bz = np.array([1, 128, 255], np.uint8), np.array([0, -1, 5, 127, -128], np.int8)
    model = make_model([node], [("a", U8, [2, 3, 4]), ("b", I8, [4, 5])], [("y", I32, [2, 3, 5])],
                       [("az", az), ("bz", bz)], opset=10)
    rng = np.random.default_rng(6)
    a, b = rng.integers(0, 256, (2, 3, 4)).astype(np.uint8), rng.integers(-128, 128, (4, 5)).astype(np.int8)
    imported = import_onnx(model)
    got = interpret(imported.graph, {imported.inputs["a"]: a, imported.inputs["b"]: b}, dict(imported.params))
    want = (a.astype(np.int32) - az.astype(np.int32)[:, None]) @ (b.astype(np.int32) - bz.astype(np.int32))
    assert got[imported.outputs["y"]].dtype == np.int32
    np.testing.assert_array_equal(got[imported.outputs["y"]], want)
    scalar = make_model([node], [("a", U8, [3, 4]), ("b", U8, [4, 2])], [("y", I32, [3, 2])],
                        [("az", np.uint8(7)), ("bz", np.uint8(200))], opset=10)
    assert "matmul" in op_types(check(scalar, {"a": a[0], "b": b[:, :2].view(np.uint8)}))


@pytest.mark.parametrize("attrs", [{}, {"pads": [1, 0, 1, 2], "strides": [2, 1]}, {"auto_pad": "SAME_UPPER"},
                                   {"group": 2, "dilations": [2, 1]}])
def test_conv_integer(attrs):
    groups = attrs.get("group", 1)
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], **attrs)
    model = make_model([node], [("x", U8, [1, 4, 6, 5])], [("y", I32, None)],
                       [("w", np.random.default_rng(7).integers(0, 256, (4, 4 // groups, 3, 2)).astype(np.uint8)),
                        ("xz", np.uint8(100)), ("wz", np.array([0, 10, 128, 255], np.uint8))], opset=10)
    check(model, {"x": np.random.default_rng(8).integers(0, 256, (1, 4, 6, 5)).astype(np.uint8)}, reference=True)


def test_conv_integer_1d():
    node = helper.make_node("ConvInteger", ["x", "w"], ["y"], pads=[1, 1])
    model = make_model([node], [("x", I8, [2, 3, 7])], [("y", I32, None)],
                       [("w", np.random.default_rng(9).integers(-128, 128, (2, 3, 3)).astype(np.int8))], opset=10)
    check(model, {"x": np.random.default_rng(10).integers(-128, 128, (2, 3, 7)).astype(np.int8)})


def test_qlinear_matmul():
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    initializers = [("as", np.float32(0.02)), ("az", np.uint8(120)), ("bs", np.float32(0.03)), ("bz", np.uint8(130)),
                    ("ys", np.float32(0.5)), ("yz", np.uint8(100))]
    model = make_model([node], [("a", U8, [2, 3, 8]), ("b", U8, [8, 4])], [("y", U8, [2, 3, 4])], initializers)
    rng = np.random.default_rng(11)
    check(model, {"a": rng.integers(0, 256, (2, 3, 8)).astype(np.uint8),
                  "b": rng.integers(0, 256, (8, 4)).astype(np.uint8)})


def test_qlinear_conv_per_channel_with_bias():
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"], ["y"],
                            pads=[1, 1, 1, 1])
    rng = np.random.default_rng(12)
    initializers = [("xs", np.float32(0.05)), ("xz", np.int8(3)), ("w", rng.integers(-128, 128, (3, 2, 3, 3)).astype(np.int8)),
                    ("ws", np.array([0.01, 0.02, 0.005], np.float32)), ("wz", np.array([0, 0, 0], np.int8)),
                    ("ys", np.float32(0.3)), ("yz", np.int8(-5)), ("bias", np.array([100, -2000, 5], np.int32))]
    model = make_model([node], [("x", I8, [1, 2, 5, 5])], [("y", I8, [1, 3, 5, 5])], initializers, opset=10)
    imported = check(model, {"x": rng.integers(-128, 128, (1, 2, 5, 5)).astype(np.int8)})
    assert "conv2d" in op_types(imported)


# --- refusals ----------------------------------------------------------------------------
def test_quantize_to_int4_is_refused_naming_the_type():
    node = helper.make_node("QuantizeLinear", ["x", "scale"], ["y"], output_dtype=TensorProto.INT4)
    model = make_model([node], [("x", F, [4])], [("y", TensorProto.INT4, [4])], [("scale", np.float32(1))])
    with pytest.raises(UnsupportedModel, match=r"\(QuantizeLinear\): QuantizeLinear's output_dtype has ONNX element type INT4, which the IR has no dtype"):
        import_onnx(model)


def test_blocked_scale_of_the_wrong_shape_is_refused():
    node = helper.make_node("DequantizeLinear", ["q", "s"], ["y"], axis=1, block_size=4)
    model = make_model([node], [("q", U8, [2, 6])], [("y", F, [2, 6])], [("s", np.ones((2, 3), np.float32))])
    with pytest.raises(UnsupportedModel, match=r"DequantizeLinear input 1 of shape \[2, 3\] for blocks of 4 along axis 1 of \[2, 6\]"):
        import_onnx(model)


def test_an_int4_zero_point_initializer_is_refused_naming_the_type():
    node = helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["y"], axis=0)
    model = make_model([node], [("x", F, [4])], [("y", TensorProto.INT4, [4])], [("scale", np.float32(1))])
    model.graph.initializer.append(helper.make_tensor("zero", TensorProto.INT4, [], [0]))
    with pytest.raises(UnsupportedModel, match=r"the IR has no element type for int4 data"):
        import_onnx(model)


# --- models from onnxruntime's quantization tools ----------------------------------------
def small_float_model():
    rng = np.random.default_rng(13)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Flatten", ["r"], ["f"]), helper.make_node("MatMul", ["f", "fc"], ["y"])]
    initializers = [("w", (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)),
                    ("b", (rng.standard_normal(8) * 0.1).astype(np.float32)),
                    ("fc", (rng.standard_normal((8 * 6 * 6, 10)) * 0.05).astype(np.float32))]
    return make_model(nodes, [("x", F, [1, 3, 6, 6])], [("y", F, [1, 10])], initializers, opset=17)


@pytest.mark.parametrize("recipe", ["qdq", "qoperator", "qdq_int8_per_channel", "dynamic"])
def test_models_quantized_by_onnxruntime_import_and_match(recipe, tmp_path):
    quantization = pytest.importorskip("onnxruntime.quantization")
    source, target = tmp_path / "float.onnx", tmp_path / "quantized.onnx"
    onnx.save(small_float_model(), str(source))
    rng = np.random.default_rng(14)

    class Calibration(quantization.CalibrationDataReader):
        def __init__(self):
            self.feeds = iter([{"x": rng.standard_normal((1, 3, 6, 6)).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.feeds, None)

    if recipe == "dynamic":
        quantization.quantize_dynamic(str(source), str(target), weight_type=quantization.QuantType.QUInt8)
    else:
        options = {"qdq": {}, "qoperator": {"quant_format": quantization.QuantFormat.QOperator},
                   "qdq_int8_per_channel": {"activation_type": quantization.QuantType.QInt8,
                                            "weight_type": quantization.QuantType.QInt8, "per_channel": True}}[recipe]
        quantization.quantize_static(str(source), str(target), Calibration(), **options)
    check(onnx.load(str(target)), {"x": rng.standard_normal((1, 3, 6, 6)).astype(np.float32)})
