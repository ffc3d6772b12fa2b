"""ONNX ConvInteger and QLinearConv (zero points per tensor or per output channel, bias,
rounding and saturation), against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import_ops import check, make_model, ops_of  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402

U8, I8 = TensorProto.UINT8, TensorProto.INT8


def _quantized(shape, seed, dtype=np.uint8):
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max + 1, shape).astype(dtype)


@pytest.mark.parametrize("options", [{}, {"pads": [1, 0, 1, 2], "strides": [2, 1]}, {"group": 2, "dilations": [1, 2]}],
                         ids=["plain", "padded_strided", "grouped_dilated"])
@pytest.mark.parametrize("static_weight", [True, False], ids=["initializer", "input"])
def test_conv_integer(options, static_weight):
    groups = options.get("group", 1)
    node = helper.make_node("ConvInteger", ["x", "w", "x_zero", "w_zero"], ["y"], **options)
    weight = _quantized((4, 4 // groups, 3, 3), 1)
    inputs = [("x", U8, [2, 4, 7, 8])] + ([] if static_weight else [("w", U8, [4, 4 // groups, 3, 3])])
    initializers = [("x_zero", np.array(128, np.uint8)), ("w_zero", np.array(3, np.uint8))] + \
        ([("w", weight)] if static_weight else [])
    model = make_model([node], inputs, [("y", TensorProto.INT32, None)], initializers, opset=10)
    imported = check(model)
    assert "conv2d" in ops_of(imported)


@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("elem, dtype", [(U8, np.uint8), (I8, np.int8)], ids=["u8", "i8"])
def test_qlinear_conv(per_channel, elem, dtype):
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], pads=[1, 1, 1, 1])
    channels = 3
    w_scale = np.array([0.02, 0.05, 0.03], np.float32) if per_channel else np.array(0.04, np.float32)
    w_zero = np.zeros(channels, np.int8) if per_channel else np.array(0, np.int8)
    initializers = [
        ("xs", np.array(0.05, np.float32)), ("xz", np.array(10, dtype)),
        ("w", _quantized((channels, 2, 3, 3), 2, np.int8)), ("ws", w_scale), ("wz", w_zero),
        ("ys", np.array(0.7, np.float32)), ("yz", np.array(5, dtype)),
        ("b", np.random.default_rng(3).integers(-500, 500, channels).astype(np.int32)),
    ]
    model = make_model([node], [("x", elem, [1, 2, 5, 6])], [("y", elem, None)], initializers, opset=10)
    check(model)


def test_qlinear_conv_with_a_scale_per_some_channels_is_a_located_error():
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], name="q")
    initializers = [("xs", np.array(0.1, np.float32)), ("xz", np.array(0, np.uint8)), ("w", _quantized((3, 1, 1, 1), 0)),
                    ("ws", np.array([0.1, 0.2], np.float32)), ("wz", np.array([0, 0], np.uint8)),
                    ("ys", np.array(0.1, np.float32)), ("yz", np.array(0, np.uint8))]
    model = make_model([node], [("x", U8, [1, 1, 2, 2])], [("y", U8, None)], initializers, opset=10)
    with pytest.raises(UnsupportedModel, match=r"(?s)ONNX node 'q' \(QLinearConv\).*zero point.*one per output channel \(3\)"):
        import_onnx(model)
