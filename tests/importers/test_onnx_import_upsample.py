"""ONNX ConvTranspose, Resize and InstanceNormalization, against onnxruntime and compiled on
the six targets."""

from __future__ import annotations

import numpy as np
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


def test_conv_transpose_with_output_shape_is_a_located_error():
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], output_shape=[10, 10], name="ct")
    model = make_model([node], [("x", F, [1, 3, 5, 5])], [("y", F, None)], [("w", weights(3, 2, 3, 3))])
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'ct' \(ConvTranspose\).*output_shape"):
        import_onnx(model)


# --- InstanceNormalization -------------------------------------------------------------
@pytest.mark.parametrize("shape", [["N", 3, 5, 4], ["N", 3, 7]])
def test_instance_norm(shape):
    node = helper.make_node("InstanceNormalization", ["x", "scale", "bias"], ["y"], epsilon=1e-3)
    model = make_model([node], [("x", F, shape)], [("y", F, shape)],
                       [("scale", weights(3) + 1), ("bias", weights(3, seed=1))])
    imported = check_everywhere(model, {"B": 2})
    assert "layernorm" in ops_of(imported)


# --- Resize ----------------------------------------------------------------------------
def _resize_model(mode, transform, nearest_mode, scales=None, sizes=None, shape=(2, 3, 5, 6), opset=13):
    """A Resize by constant `scales`, or to `sizes` (the spatial ones) after the input's own
    batch and channels, computed from Shape(x) as exporters write it."""
    options = {"mode": mode, "coordinate_transformation_mode": transform}
    if nearest_mode:
        options["nearest_mode"] = nearest_mode
    if scales is not None:
        nodes = [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="r0", **options)]
        initializers = [("scales", np.array(scales, np.float32))]
    else:
        nodes = [helper.make_node("Shape", ["x"], ["shape"], end=2),
                 helper.make_node("Concat", ["shape", "spatial"], ["sizes"], axis=0),
                 helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="r0", **options)]
        initializers = [("spatial", np.array(sizes, np.int64))]
        opset = max(opset, 15)  # Shape's end attribute
    return make_model(nodes, [("x", F, ["N", *shape[1:]])], [("y", F, None)], initializers, opset=opset)


@pytest.mark.parametrize("transform, nearest_mode", [
    ("asymmetric", "floor"),             # F.interpolate(mode="nearest")
    ("half_pixel", "round_prefer_floor"),  # the ONNX defaults
    ("pytorch_half_pixel", "round_prefer_ceil"),
    ("align_corners", "round_prefer_floor"),
    ("asymmetric", "ceil"),
])
@pytest.mark.parametrize("scales", [[1, 1, 2, 2], [1, 1, 1.5, 0.5], [1, 1, 3, 1]])
def test_resize_nearest(transform, nearest_mode, scales):
    imported = check_everywhere(_resize_model("nearest", transform, nearest_mode, scales=scales), {"B": 2})
    assert {"gather", "expand"} & set(ops_of(imported))
    assert not imported.params  # the picked rows are literals, not params `rlxir run` would fill


def test_resize_nearest_by_a_whole_factor_is_a_broadcast():
    imported = check_everywhere(_resize_model("nearest", "asymmetric", "floor", scales=[1, 1, 2, 2]), {"B": 2})
    assert set(ops_of(imported)) == {"reshape", "expand"}


@pytest.mark.parametrize("transform", ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"])
@pytest.mark.parametrize("target", [{"scales": [1, 1, 2, 2]}, {"sizes": [8, 4]}, {"sizes": [1, 9]}])
def test_resize_bilinear(transform, target):
    imported = check_everywhere(_resize_model("linear", transform, None, **target), {"B": 2})
    assert "gather" in ops_of(imported)
    assert not imported.params


def test_resize_linear_of_a_sequence():
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear")
    model = make_model([node], [("x", F, ["N", 3, 7])], [("y", F, None)],
                       [("scales", np.array([1, 1, 2.5], np.float32))])
    check_everywhere(model, {"B": 2})


@pytest.mark.parametrize("attrs, scales, why", [
    ({"mode": "cubic"}, [1, 1, 2, 2], "mode 'cubic'"),
    ({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"}, [1, 1, 2, 2], "tf_crop_and_resize"),
    ({"mode": "nearest", "antialias": 1}, [1, 1, 2, 2], "antialias"),
    ({"mode": "nearest"}, [1, 1, 0.1, 1], "from 4 to 0"),
])
def test_unsupported_resize_modes_are_located_errors(attrs, scales, why):
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="r1", **attrs)
    model = make_model([node], [("x", F, [1, 3, 4, 4])], [("y", F, None)],
                       [("scales", np.array(scales, np.float32))], opset=18)
    with pytest.raises(UnsupportedModel, match=rf"ONNX node 'r1' \(Resize\).*{why}"):
        import_onnx(model)


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
