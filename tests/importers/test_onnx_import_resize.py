"""ONNX Resize and Upsample (every mode, coordinate transformation, antialias, axes,
keep_aspect_ratio_policy, tf_crop_and_resize), against onnxruntime and compiled on the six
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
# Scales that make whole output lengths: where scale * size is fractional, align_corners
# divides by it as ONNX's reference does, and onnxruntime by the whole output length.
@pytest.mark.parametrize("scales", [[1, 1, 2, 2], [1, 1, 1.6, 0.5], [1, 1, 3, 1]])
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


@pytest.mark.parametrize("attrs, scales", [
    ({"mode": "cubic"}, [1, 1, 2, 1.5]),
    ({"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1}, [1, 1, 0.6, 1.7]),
    ({"mode": "cubic", "coordinate_transformation_mode": "align_corners"}, [1, 1, 2, 0.5]),
    ({"mode": "cubic", "coordinate_transformation_mode": "asymmetric"}, [1, 1, 2, 2]),
    ({"mode": "linear", "antialias": 1}, [1, 1, 0.6, 0.4]),
    ({"mode": "cubic", "antialias": 1}, [1, 1, 0.5, 0.8]),
    ({"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"}, [1, 1, 0.7, 1.3]),
], ids=["cubic", "cubic_a_exclude_outside", "cubic_align_corners", "cubic_asymmetric", "linear_antialias",
        "cubic_antialias", "half_pixel_symmetric"])
def test_resize_cubic_antialias_and_symmetric(attrs, scales):
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], **attrs)
    model = make_model([node], [("x", F, ["N", 3, 9, 8])], [("y", F, None)],
                       [("scales", np.array(scales, np.float32))], opset=19)
    imported = check_everywhere(model, {"B": 2})
    assert "gather" in ops_of(imported)


@pytest.mark.parametrize("axes, roi", [(None, [0, 0, 0.2, 0.4, 1, 1, 0.7, 1.2]), ([3, 2], [0.4, 0.2, 1.2, 0.7])])
def test_resize_tf_crop_and_resize_extrapolates(axes, roi):
    """Part of the roi lies past the input: those rows read extrapolation_value."""
    options = {"axes": axes} if axes else {}
    sizes = [7, 6] if axes else [2, 3, 6, 7]
    node = helper.make_node("Resize", ["x", "roi", "", "sizes"], ["y"], mode="linear",
                            coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-3.0,
                            **options)
    model = make_model([node], [("x", F, [2, 3, 5, 6])], [("y", F, None)],
                       [("roi", np.array(roi, np.float32)), ("sizes", np.array(sizes, np.int64))], opset=18)
    imported = check_everywhere(model)
    assert "where" in ops_of(imported)


def test_resize_tf_half_pixel_for_nn_of_opset_11():
    node = helper.make_node("Resize", ["x", "roi", "scales"], ["y"], mode="nearest",
                            coordinate_transformation_mode="tf_half_pixel_for_nn")
    model = make_model([node], [("x", F, [1, 2, 5, 4])], [("y", F, None)],
                       [("roi", np.zeros(0, np.float32)), ("scales", np.array([1, 1, 1.7, 0.6], np.float32))], opset=11)
    check_everywhere(model)


@pytest.mark.parametrize("policy", ["not_larger", "not_smaller"])
def test_resize_keep_aspect_ratio_with_axes(policy):
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest", axes=[2, 3],
                            keep_aspect_ratio_policy=policy)
    model = make_model([node], [("x", F, [1, 2, 4, 6])], [("y", F, None)], [("sizes", np.array([7, 8], np.int64))],
                       opset=18)
    check_everywhere(model)


def test_resize_nearest_of_integers_is_a_gather():
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")
    model = make_model([node], [("x", TensorProto.INT32, [1, 2, 3, 4])], [("y", TensorProto.INT32, None)],
                       [("scales", np.array([1, 1, 1.5, 0.75], np.float32))], opset=13)
    assert "gather" in ops_of(check_everywhere(model))


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_upsample_is_an_asymmetric_resize(mode):
    node = helper.make_node("Upsample", ["x", "scales"], ["y"], mode=mode)
    model = make_model([node], [("x", F, [1, 2, 3, 4])], [("y", F, None)],
                       [("scales", np.array([1, 1, 2, 1.5], np.float32))], opset=9)
    check_everywhere(model)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_of_opset_10_is_asymmetric(mode):
    node = helper.make_node("Resize", ["x", "scales"], ["y"], mode=mode)
    model = make_model([node], [("x", F, [1, 2, 4, 5])], [("y", F, None)],
                       [("scales", np.array([1, 1, 2, 1.5], np.float32))], opset=10)
    check_everywhere(model)


def test_upsample_of_opset_7_reads_its_scales_attribute():
    node = helper.make_node("Upsample", ["x"], ["y"], mode="nearest", scales=[1.0, 1.0, 2.0, 3.0])
    check_everywhere(make_model([node], [("x", F, [1, 2, 3, 4])], [("y", F, None)], opset=7))


def test_upsample_of_opset_1_scales_height_and_width():
    from rlxir.interpreter import interpret

    node = helper.make_node("Upsample", ["x"], ["y"], mode="nearest", height_scale=2.0, width_scale=3.0)
    model = make_model([node], [("x", F, [1, 2, 3, 4])], [("y", F, None)], opset=1)
    model.ir_version = 3
    imported = import_onnx(model)
    x = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    got = interpret(imported.graph, {imported.inputs["x"]: x}, dict(imported.params))[imported.outputs["y"]]
    np.testing.assert_array_equal(got, x.repeat(2, axis=2).repeat(3, axis=3))


@pytest.mark.parametrize("attrs, scales, why", [
    ({"mode": "area"}, [1, 1, 2, 2], "mode 'area'"),
    ({"mode": "linear", "coordinate_transformation_mode": "tf_half_pixel"}, [1, 1, 2, 2],
     "coordinate_transformation_mode 'tf_half_pixel'"),
    ({"mode": "nearest", "antialias": 1}, [1, 1, 2, 2], "antialias in mode nearest"),
    ({"mode": "nearest"}, [1, 1, 0.1, 1], "from 4 to 0"),
])
def test_unsupported_resize_modes_are_located_errors(attrs, scales, why):
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="r1", **attrs)
    model = make_model([node], [("x", F, [1, 3, 4, 4])], [("y", F, None)],
                       [("scales", np.array(scales, np.float32))], opset=18)
    with pytest.raises(UnsupportedModel, match=rf"ONNX node 'r1' \(Resize\).*{why}"):
        import_onnx(model)


@pytest.mark.parametrize("elem, dtype", [(TensorProto.UINT8, np.uint8), (TensorProto.INT8, np.int8)])
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_resize_interpolating_integers_rounds_half_to_even_and_saturates(elem, dtype, mode):
    """Compared with ONNX's reference (onnxruntime rounds ties its own way): cubic
    overshoots past the 8-bit range, which saturates."""
    from onnx.reference import ReferenceEvaluator

    from rlxir.interpreter import interpret

    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode)
    model = make_model([node], [("x", elem, [1, 2, 4, 5])], [("y", elem, None)],
                       [("scales", np.array([1, 1, 2, 1.5], np.float32))], opset=13)
    info = np.iinfo(dtype)
    x = np.random.default_rng(0).integers(info.min, info.max + 1, (1, 2, 4, 5)).astype(dtype)
    imported = import_onnx(model)
    got = interpret(imported.graph, {imported.inputs["x"]: x}, dict(imported.params))[imported.outputs["y"]]
    np.testing.assert_array_equal(got, ReferenceEvaluator(model).run(None, {"x": x})[0])
    assert "cast" in ops_of(imported)
