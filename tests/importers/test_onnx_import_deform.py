"""ONNX DeformConv (offsets, mask, bias, groups, offset groups, strides, pads, dilations),
against onnxruntime and compiled on the six targets."""

from __future__ import annotations

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import_ops import make_model, ops_of, weights  # noqa: E402
from test_onnx_import_scatter import check_everywhere  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402

F = TensorProto.FLOAT


@pytest.mark.parametrize("options, out_size", [
    ({"kernel_shape": [3, 3]}, [4, 5]),
    ({"kernel_shape": [2, 3], "pads": [1, 0, 1, 2], "strides": [2, 1], "dilations": [1, 2]}, [4, 5]),
    ({"kernel_shape": [3, 2], "group": 2, "offset_group": 2, "pads": [1, 1, 1, 1]}, [6, 8]),
], ids=["plain", "padded_strided_dilated", "grouped"])
@pytest.mark.parametrize("with_mask", [False, True], ids=["no_mask", "mask"])
def test_deform_conv(options, out_size, with_mask):
    """Offsets random normal (scaled by 2): taps land between cells and past the borders."""
    groups, offset_groups = options.get("group", 1), options.get("offset_group", 1)
    taps = options["kernel_shape"][0] * options["kernel_shape"][1]
    scale = helper.make_node("Mul", ["raw_offset", "two"], ["offset"])
    inputs = ["x", "w", "offset", "b"] + (["mask"] if with_mask else [])
    node = helper.make_node("DeformConv", inputs, ["y"], **options)
    graph_inputs = [("x", F, [2, 4, 6, 7]), ("raw_offset", F, [2, offset_groups * taps * 2, *out_size])]
    if with_mask:
        graph_inputs.append(("mask", F, [2, offset_groups * taps, *out_size]))
    initializers = [("w", weights(6, 4 // groups, *options["kernel_shape"])), ("b", weights(6, seed=1)),
                    ("two", weights(1, seed=2) * 0 + 2)]
    model = make_model([scale, node], graph_inputs, [("y", F, None)], initializers, opset=19)
    imported = check_everywhere(model, atol=1e-4)
    assert "gather_elements" in ops_of(imported) and "matmul" in ops_of(imported)


def test_deform_conv_over_one_spatial_dim_is_a_located_error():
    node = helper.make_node("DeformConv", ["x", "w", "offset"], ["y"], kernel_shape=[2], name="d1")
    model = make_model([node], [("x", F, [1, 1, 5]), ("offset", F, [1, 2, 4])], [("y", F, None)],
                       [("w", weights(1, 1, 2))], opset=19)
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'd1' \(DeformConv\): a 1-D DeformConv"):
        import_onnx(model)
