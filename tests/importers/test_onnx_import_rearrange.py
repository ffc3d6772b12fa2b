"""ONNX ops that move image cells: Pad in every mode (negative pads too), DepthToSpace,
SpaceToDepth, CenterCropPad and Col2Im, against onnxruntime and compiled on the six
targets."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import_ops import make_model, ops_of  # noqa: E402
from test_onnx_import_scatter import check_everywhere  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402

F = TensorProto.FLOAT


@pytest.mark.parametrize("mode", ["reflect", "edge", "wrap"])
@pytest.mark.parametrize("pads, axes", [([0, 0, 2, 1, 0, 0, 1, 2], None), ([3, 0, 2, 2], [2, -1])],
                         ids=["all_axes", "some_axes"])
def test_pad_modes_are_gathers_of_static_rows(mode, pads, axes):
    inputs = ["x", "pads", "", "axes"] if axes else ["x", "pads"]
    node = helper.make_node("Pad", inputs, ["y"], mode=mode)
    initializers = [("pads", np.array(pads, np.int64))] + ([("axes", np.array(axes, np.int64))] if axes else [])
    model = make_model([node], [("x", F, [2, 3, 4, 3])], [("y", F, None)], initializers, opset=19)
    imported = check_everywhere(model)
    assert "gather" in ops_of(imported)


def test_constant_pad_with_negative_pads_crops():
    node = helper.make_node("Pad", ["x", "pads", "value"], ["y"])
    model = make_model([node], [("x", F, [2, 3, 5, 4])], [("y", F, None)],
                       [("pads", np.array([0, 0, -1, 2, 0, 1, 1, -2], np.int64)),
                        ("value", np.array(1.5, np.float32))], opset=18)
    imported = check_everywhere(model)
    assert "slice" in ops_of(imported)


def test_reflect_pad_with_negative_pads_is_a_located_error():
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect", name="p1")
    model = make_model([node], [("x", F, [1, 1, 4, 4])], [("y", F, None)],
                       [("pads", np.array([0, 0, -1, 1, 0, 0, 1, 1], np.int64))], opset=18)
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'p1' \(Pad\).*negative pads"):
        import_onnx(model)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space(mode):
    node = helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2, mode=mode)
    imported = check_everywhere(make_model([node], [("x", F, ["N", 8, 3, 2])], [("y", F, None)]), {"B": 2})
    assert "transpose" in ops_of(imported)


def test_space_to_depth_undoes_depth_to_space():
    node = helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=3)
    check_everywhere(make_model([node], [("x", F, ["N", 2, 6, 3])], [("y", F, None)]), {"B": 2})


@pytest.mark.parametrize("shape, axes", [([4, 7, 2], None), ([6, 3], [1, 2]), ([2, 9], [-1, -3])])
def test_center_crop_pad(shape, axes):
    options = {"axes": axes} if axes else {}
    node = helper.make_node("CenterCropPad", ["x", "shape"], ["y"], **options)
    model = make_model([node], [("x", F, [4, 5, 4])], [("y", F, None)], [("shape", np.array(shape, np.int64))],
                       opset=18)
    check_everywhere(model)


@pytest.mark.parametrize("options, image, block", [
    ({}, [5, 5], [2, 2]),
    ({"strides": [2, 1], "pads": [1, 0, 1, 2], "dilations": [1, 2]}, [6, 5], [3, 2]),
    ({"strides": [2, 2, 1]}, [4, 3, 3], [2, 1, 2]),
], ids=["plain", "strided_padded_dilated", "3d"])
def test_col2im_sums_columns_back(options, image, block):
    count = len(image)
    strides = options.get("strides", [1] * count)
    dilations = options.get("dilations", [1] * count)
    pads = options.get("pads", [0] * 2 * count)
    columns = int(np.prod([(image[a] + pads[a] + pads[count + a] - dilations[a] * (block[a] - 1) - 1) // strides[a]
                           + 1 for a in range(count)]))
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], **options)
    model = make_model([node], [("x", F, [2, 3 * int(np.prod(block)), columns])], [("y", F, None)],
                       [("image", np.array(image, np.int64)), ("block", np.array(block, np.int64))], opset=18)
    imported = check_everywhere(model)
    assert "scatter_elements" in ops_of(imported)


@pytest.mark.parametrize("op_type, options, shape", [
    ("Pad", {"pads": [0, 0, 1, 2, 0, 0, 2, 1], "mode": "reflect"}, [1, 2, 5, 6]),
    ("Pad", {"pads": [0, 0, 1, 2, 0, 0, 2, 1], "value": 1.5}, [1, 2, 5, 6]),
    ("DepthToSpace", {"blocksize": 2}, [1, 8, 3, 3]),
    ("SpaceToDepth", {"blocksize": 2}, [1, 2, 4, 6]),
], ids=["pad_reflect", "pad_value", "depth_to_space", "space_to_depth"])
def test_opset_1_and_2_forms(op_type, options, shape):
    """Pad-2 takes its pads and value as attributes; DepthToSpace-1 is DCR."""
    node = helper.make_node(op_type, ["x"], ["y"], **options)
    model = make_model([node], [("x", F, shape)], [("y", F, None)], opset=2 if op_type == "Pad" else 1)
    model.ir_version = 3
    check_everywhere(model)
