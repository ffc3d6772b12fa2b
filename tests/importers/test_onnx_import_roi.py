"""ONNX RoiAlign (avg and max, both coordinate transformations, spatial_scale, a fixed or
adaptive sampling grid), against onnxruntime and compiled on the six targets."""

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
ROIS = np.array([[0.5, 1.0, 6.0, 5.5], [2.0, 0.0, 9.5, 9.0], [-2.0, 3.0, 4.0, 12.0]], np.float32)


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("transform", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("spatial_scale", [1.0, 0.5])
def test_roi_align_with_run_time_regions(mode, transform, spatial_scale):
    """Regions from |input| * 4: corners anywhere in and past the image, in any order."""
    regions = helper.make_node("Abs", ["raw"], ["magnitude"])
    spread = helper.make_node("Mul", ["magnitude", "four"], ["rois"])
    node = helper.make_node("RoiAlign", ["x", "rois", "batch"], ["y"], mode=mode, output_height=3, output_width=4,
                            sampling_ratio=2, spatial_scale=spatial_scale, coordinate_transformation_mode=transform)
    model = make_model([regions, spread, node], [("x", F, [2, 3, 10, 9]), ("raw", F, [5, 4])], [("y", F, None)],
                       [("four", np.array(4.0, np.float32)), ("batch", np.array([0, 1, 1, 0, 1], np.int64))],
                       opset=16)
    imported = check_everywhere(model, atol=1e-4)
    assert "gather_elements" in ops_of(imported)


def test_roi_align_adaptive_grid_of_static_regions():
    node = helper.make_node("RoiAlign", ["x", "rois", "batch"], ["y"], output_height=2, output_width=2,
                            sampling_ratio=0)
    rois = np.array([[0.0, 0.0, 5.0, 6.0], [1.0, 2.0, 6.0, 7.5]], np.float32)
    model = make_model([node], [("x", F, [1, 2, 8, 8])], [("y", F, None)],
                       [("rois", rois), ("batch", np.array([0, 0], np.int64))], opset=16)
    check_everywhere(model, atol=1e-4)


def test_roi_align_adaptive_grid_of_run_time_regions_is_a_located_error():
    node = helper.make_node("RoiAlign", ["x", "rois", "batch"], ["y"], sampling_ratio=0, name="ra")
    model = make_model([node], [("x", F, [1, 2, 8, 8]), ("rois", F, [2, 4])], [("y", F, None)],
                       [("batch", np.array([0, 0], np.int64))], opset=16)
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'ra' \(RoiAlign\).*sampling_ratio 0"):
        import_onnx(model)


@pytest.mark.parametrize("spatial_scale", [1.0, 0.4])
def test_max_roi_pool(spatial_scale):
    """Regions in and past the image (one past it entirely: its bins are empty, 0)."""
    rois = np.array([[0, 0.4, 1.0, 6.0, 5.5], [1, 2.0, 0.0, 8.5, 9.0], [1, -2.0, 3.0, 4.0, 12.0],
                     [0, 3.0, 2.0, 3.0, 2.0], [1, 20.0, 20.0, 25.0, 26.0]], np.float32)
    node = helper.make_node("MaxRoiPool", ["x", "rois"], ["y"], pooled_shape=[3, 2], spatial_scale=spatial_scale)
    model = make_model([node], [("x", F, [2, 3, 10, 9])], [("y", F, None)], [("rois", rois)], opset=16)
    imported = check_everywhere(model)
    assert "reduce_max" in ops_of(imported)
