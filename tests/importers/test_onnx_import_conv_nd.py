"""ONNX Conv and ConvTranspose over 3 spatial dims (through the IR's conv2d), against
onnxruntime and compiled on the six targets."""

from __future__ import annotations

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import_ops import make_model, ops_of, weights  # noqa: E402
from test_onnx_import_scatter import check_everywhere  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402

F = TensorProto.FLOAT

OPTIONS_3D = [
    {},
    {"strides": [2, 1, 2], "pads": [1, 0, 1, 0, 1, 2]},
    {"dilations": [2, 1, 2], "group": 2, "pads": [2, 1, 0, 1, 1, 1]},
    {"strides": [2, 2, 1], "auto_pad": "SAME_UPPER"},
]
IDS_3D = ["plain", "strided_padded", "dilated_grouped", "same_upper"]


@pytest.mark.parametrize("options", OPTIONS_3D, ids=IDS_3D)
@pytest.mark.parametrize("static_weight", [True, False], ids=["initializer", "input"])
def test_conv_3d_is_one_conv2d_over_stacked_depth_windows(options, static_weight):
    groups = options.get("group", 1)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], **options)
    inputs = [("x", F, ["N", 4, 6, 7, 5])] + ([] if static_weight else [("w", F, [6, 4 // groups, 3, 2, 3])])
    initializers = [("b", weights(6, seed=1))] + ([("w", weights(6, 4 // groups, 3, 2, 3))] if static_weight else [])
    model = make_model([node], inputs, [("y", F, None)], initializers)
    imported = check_everywhere(model, {"B": 2})
    assert ops_of(imported).count("conv2d") == 1


@pytest.mark.parametrize("options", [
    {},
    {"strides": [2, 1, 2], "pads": [1, 0, 1, 0, 1, 1], "output_padding": [1, 0, 1]},
    {"dilations": [2, 1, 1], "group": 2, "strides": [1, 2, 2]},
    {"strides": [2, 2, 2], "output_shape": [9, 8, 10]},
], ids=["plain", "strided_padded_output_padding", "dilated_grouped", "output_shape"])
@pytest.mark.parametrize("static_weight", [True, False], ids=["initializer", "input"])
def test_conv_transpose_3d_is_a_conv_of_the_spread_input(options, static_weight):
    groups = options.get("group", 1)
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **options)
    inputs = [("x", F, [2, 4, 4, 3, 5])] + ([] if static_weight else [("w", F, [4, 3, 2, 3, 3])])
    initializers = [("b", weights(3 * groups, seed=1))] + ([("w", weights(4, 3, 2, 3, 3))] if static_weight else [])
    model = make_model([node], inputs, [("y", F, None)], initializers)
    imported = check_everywhere(model)
    assert "conv2d" in ops_of(imported)


def test_conv_over_four_spatial_dims_is_a_located_error():
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c4")
    model = make_model([node], [("x", F, [1, 1, 3, 3, 3, 3])], [("y", F, None)], [("w", weights(1, 1, 2, 2, 2, 2))])
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'c4' \(Conv\): a 4-D Conv"):
        import_onnx(model)
