"""ONNX GridSample (every mode and padding_mode, align_corners, 2-D and 3-D) and AffineGrid,
against onnxruntime and compiled on the six targets."""

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


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_grid_sample_2d(mode, padding_mode, align_corners):
    """The grid is random normal: many positions fall past the borders. Bicubic with border
    padding moves such a position onto the edge before taking its taps in ONNX's reference
    (which the importer follows), while onnxruntime clamps each tap: that case is compared
    on positions inside the borders (a Tanh of the grid)."""
    node = helper.make_node("GridSample", ["x", "positions"], ["y"], mode=mode, padding_mode=padding_mode,
                            align_corners=align_corners)
    squash = mode == "bicubic" and padding_mode == "border"
    first = helper.make_node("Tanh" if squash else "Identity", ["grid"], ["positions"])
    model = make_model([first, node], [("x", F, [2, 3, 5, 4]), ("grid", F, [2, 6, 7, 2])], [("y", F, None)],
                       opset=16)
    imported = check_everywhere(model, atol=1e-4)
    assert "gather_elements" in ops_of(imported)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_3d(mode, padding_mode):
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode, padding_mode=padding_mode)
    model = make_model([node], [("x", F, [1, 2, 3, 4, 5]), ("grid", F, [1, 2, 3, 4, 3])], [("y", F, None)], opset=20)
    check_everywhere(model, atol=1e-4)


@pytest.mark.parametrize("size, align_corners", [([2, 3, 4, 5], 0), ([2, 3, 4, 5], 1), ([2, 1, 3, 2, 4], 0),
                                                 ([2, 1, 3, 2, 4], 1)])
def test_affine_grid(size, align_corners):
    """(A dim of one cell with align_corners is left out: ONNX's reference puts it at -1,
    PyTorch at 0 and onnxruntime at 1; the importer follows the reference.)"""
    rank = len(size) - 2
    node = helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=align_corners)
    model = make_model([node], [("theta", F, [2, rank, rank + 1])], [("grid", F, None)],
                       [("size", np.array(size, np.int64))], opset=20)
    imported = check_everywhere(model)
    assert "matmul" in ops_of(imported)


def test_grid_sample_of_an_unknown_mode_is_a_located_error():
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode="area", name="gs")
    model = make_model([node], [("x", F, [1, 1, 3, 3]), ("grid", F, [1, 2, 2, 2])], [("y", F, None)], opset=16)
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'gs' \(GridSample\).*mode 'area'"):
        import_onnx(model)


def test_affine_grid_to_a_run_time_size_is_a_located_error():
    node = helper.make_node("AffineGrid", ["theta", "size"], ["grid"], name="ag")
    model = make_model([node], [("theta", F, [1, 2, 3]), ("size", TensorProto.INT64, [4])], [("grid", F, None)],
                       opset=20)
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'ag' \(AffineGrid\).*size"):
        import_onnx(model)
