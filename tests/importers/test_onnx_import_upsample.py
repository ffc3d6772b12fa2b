"""ONNX ConvTranspose, InstanceNormalization and dilated pooling, against onnxruntime and compiled on
the six targets."""

from __future__ import annotations

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import_ops import make_model, ops_of, weights  # noqa: E402
from test_onnx_import_scatter import check_everywhere  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402

F = TensorProto.FLOAT


# --- ConvTranspose ---------------------------------------------------------------------
@pytest.mark.parametrize("options", [
    {},
    {"strides": [2, 2]},
    {"strides": [2, 3], "pads": [1, 0, 1, 2], "output_padding": [1, 2]},
    {"strides": [2, 2], "dilations": [2, 1], "pads": [1, 1, 0, 1], "group": 2},
    {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
    {"strides": [3, 2], "auto_pad": "SAME_LOWER", "kernel_shape": [3, 3]},
], ids=["plain", "stride2", "pads_output_padding", "dilated_grouped", "same_upper", "same_lower"])
def test_conv_transpose_2d(options):
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **options)
    model = make_model([node], [("x", F, ["N", 4, 5, 6])], [("y", F, None)],
                       [("w", weights(4, 3, 3, 3)), ("b", weights(3 * options.get("group", 1), seed=1))])
    imported = check_everywhere(model, {"B": 2})
    assert "conv2d_grad_input" in ops_of(imported)


def test_conv_transpose_1d_without_bias():
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2], pads=[1, 0])
    model = make_model([node], [("x", F, ["N", 3, 7])], [("y", F, None)], [("w", weights(3, 2, 4))])
    check_everywhere(model, {"B": 2})


@pytest.mark.parametrize("options", [
    {"strides": [2, 2], "output_shape": [12, 11]},
    {"strides": [3, 2], "output_shape": [14, 10]},
    {"strides": [2, 2], "output_shape": [11, 9], "auto_pad": "SAME_UPPER"},
], ids=["larger", "negative_pads", "same_upper"])
def test_conv_transpose_with_output_shape(options):
    """output_shape overrides pads: its total padding split as ONNX splits it (a negative
    total adds zero cells, then the bias)."""
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **options)
    model = make_model([node], [("x", F, [1, 3, 5, 5])], [("y", F, None)],
                       [("w", weights(3, 2, 3, 3)), ("b", weights(2, seed=2))])
    check_everywhere(model)


def test_conv_transpose_of_opset_1():
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2])
    model = make_model([node], [("x", F, [1, 3, 4, 4])], [("y", F, None)], [("w", weights(3, 2, 3, 3))], opset=1)
    model.ir_version = 3
    check_everywhere(model)


def test_conv_transpose_with_output_padding_past_the_stride_is_a_located_error():
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], output_padding=[2, 0], name="ct")
    model = make_model([node], [("x", F, [1, 3, 5, 5])], [("y", F, None)], [("w", weights(3, 2, 3, 3))])
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'ct' \(ConvTranspose\).*output_padding"):
        import_onnx(model)


# --- InstanceNormalization -------------------------------------------------------------
@pytest.mark.parametrize("shape", [["N", 3, 5, 4], ["N", 3, 7]])
def test_instance_norm(shape):
    node = helper.make_node("InstanceNormalization", ["x", "scale", "bias"], ["y"], epsilon=1e-3)
    model = make_model([node], [("x", F, shape)], [("y", F, shape)],
                       [("scale", weights(3) + 1), ("bias", weights(3, seed=1))])
    imported = check_everywhere(model, {"B": 2})
    assert "layernorm" in ops_of(imported)


# --- dilated and ceil-mode pooling -----------------------------------------------------
@pytest.mark.parametrize("op_type", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize("options", [
    {"kernel_shape": [3, 3], "dilations": [2, 2]},
    {"kernel_shape": [3, 2], "dilations": [2, 3], "strides": [2, 1], "pads": [1, 1, 2, 0]},
    {"kernel_shape": [2, 3], "dilations": [3, 1], "strides": [2, 2], "pads": [1, 1, 0, 1], "ceil_mode": 1},
    {"kernel_shape": [3, 3], "dilations": [2, 2], "strides": [3, 3], "ceil_mode": 1, "count_include_pad": 1,
     "pads": [1, 1, 1, 1]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
], ids=["dilated", "dilated_strided_padded", "dilated_ceil", "dilated_ceil_counting_pads", "ceil"])
def test_dilated_and_ceil_mode_pooling(op_type, options):
    if op_type == "MaxPool":
        options = {key: value for key, value in options.items() if key != "count_include_pad"}
    node = helper.make_node(op_type, ["x"], ["y"], **options)
    model = make_model([node], [("x", F, ["N", 2, 11, 10])], [("y", F, None)], opset=19)
    check_everywhere(model, {"B": 2})
