"""ONNX pooling over 1, 2 and 3 spatial dims (MaxPool, AveragePool, LpPool, the global
forms), MaxPool's Indices output and MaxUnpool, against onnxruntime and compiled on the six
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
I64 = TensorProto.INT64

OPTIONS_1D = [
    {"kernel_shape": [3]},
    {"kernel_shape": [3], "strides": [2], "pads": [1, 0], "ceil_mode": 1},
    {"kernel_shape": [2], "dilations": [2], "strides": [2], "pads": [1, 0], "count_include_pad": 1},
    {"kernel_shape": [4], "auto_pad": "SAME_LOWER", "strides": [3]},
]
OPTIONS_3D = [
    {"kernel_shape": [2, 2, 2]},
    {"kernel_shape": [3, 2, 3], "strides": [2, 1, 2], "pads": [1, 0, 1, 1, 1, 0], "count_include_pad": 1},
    {"kernel_shape": [2, 3, 2], "strides": [2, 2, 1], "pads": [0, 1, 1, 0, 0, 1], "ceil_mode": 1},
    {"kernel_shape": [2, 2, 3], "dilations": [2, 1, 2], "pads": [1, 1, 0, 0, 1, 1]},
    {"kernel_shape": [3, 3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2, 2]},
]


def _pool_model(op_type, options, shape, opset=19):
    if op_type == "MaxPool":
        options = {key: value for key, value in options.items() if key != "count_include_pad"}
    if op_type == "LpPool":
        options = {key: value for key, value in options.items() if key != "count_include_pad"}
    node = helper.make_node(op_type, ["x"], ["y"], **options)
    return make_model([node], [("x", F, ["N", *shape[1:]])], [("y", F, None)], opset=opset)


@pytest.mark.parametrize("op_type", ["MaxPool", "AveragePool", "LpPool"])
@pytest.mark.parametrize("options", OPTIONS_1D, ids=["plain", "ceil", "dilated_counting_pads", "same_lower"])
def test_pool_1d_runs_over_a_unit_height(op_type, options):
    imported = check_everywhere(_pool_model(op_type, options, [2, 3, 11]), {"B": 2})
    assert "reshape" in ops_of(imported)


@pytest.mark.parametrize("op_type", ["MaxPool", "AveragePool", "LpPool"])
@pytest.mark.parametrize("options", OPTIONS_3D, ids=["plain", "counting_pads", "ceil", "dilated", "same_upper"])
def test_pool_3d_is_a_2d_pool_then_a_pool_over_depth(op_type, options):
    imported = check_everywhere(_pool_model(op_type, options, [2, 2, 7, 7, 5]), {"B": 2})
    pools = [op for op in ops_of(imported) if op.endswith("pool2d")]
    assert len(pools) == 2 or options.get("dilations")


@pytest.mark.parametrize("p", [1, 2, 3])
def test_lp_pool_norms(p):
    node = helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 3], strides=[1, 2], pads=[1, 0, 0, 1], p=p)
    model = make_model([node], [("x", F, ["N", 3, 5, 6])], [("y", F, None)], opset=18)
    check_everywhere(model, {"B": 2})


@pytest.mark.parametrize("op_type", ["GlobalLpPool", "GlobalMaxPool", "GlobalAveragePool"])
@pytest.mark.parametrize("shape", [[2, 3, 5], [2, 3, 4, 5, 3]])
def test_global_pools_of_any_rank(op_type, shape):
    node = helper.make_node(op_type, ["x"], ["y"], **({"p": 3} if op_type == "GlobalLpPool" else {}))
    check_everywhere(make_model([node], [("x", F, ["N", *shape[1:]])], [("y", F, None)]), {"B": 2})


@pytest.mark.parametrize("storage_order", [0, 1])
@pytest.mark.parametrize("options, shape", [
    ({"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1]}, [2, 3, 5, 6]),
    ({"kernel_shape": [2, 2], "dilations": [2, 1], "ceil_mode": 1, "strides": [2, 2]}, [1, 2, 7, 5]),
    ({"kernel_shape": [3], "strides": [2]}, [2, 2, 9]),
], ids=["2d", "dilated_ceil", "1d"])
def test_max_pool_indices(storage_order, options, shape):
    """Values with ties (rounded) too: the first maximum in scan order is the one numbered."""
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], storage_order=storage_order, **options)
    model = make_model([node], [("x", F, shape)], [("y", F, None), ("i", I64, None)], opset=12)
    imported = check_everywhere(model)
    assert "reduce_min" in ops_of(imported)


def test_max_pool_indices_with_ties():
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], strides=[1, 1])
    model = make_model([node], [("x", F, [1, 1, 3, 3])], [("y", F, None), ("i", I64, None)],
                       [("x", np.array([[[[1, 1, 0], [1, 1, 2], [0, 2, 2]]]], np.float32))], opset=12)
    from rlxir.interpreter import interpret

    imported = import_onnx(model)
    got = interpret(imported.graph, {}, dict(imported.params))
    indices = got[imported.outputs["i"]]
    np.testing.assert_array_equal(indices.reshape(-1), [0, 5, 7, 5])


@pytest.mark.parametrize("output_shape", [None, [2, 3, 6, 7]])
def test_max_unpool_scatters_the_pooled_values(output_shape):
    """Indices from a MaxPool; with output_shape, the unpooled block at the start of each dim."""
    pool = helper.make_node("MaxPool", ["x"], ["pooled", "indices"], kernel_shape=[2, 2], strides=[2, 2])
    inputs = ["pooled", "indices"] + (["shape"] if output_shape else [])
    unpool = helper.make_node("MaxUnpool", inputs, ["y"], kernel_shape=[2, 2], strides=[2, 2])
    initializers = [("shape", np.array(output_shape, np.int64))] if output_shape else []
    model = make_model([pool, unpool], [("x", F, [2, 3, 4, 6])], [("y", F, None)], initializers, opset=11)
    if output_shape is None:
        imported = check_everywhere(model)
    else:
        from rlxir.interpreter import interpret

        imported = import_onnx(model)
        x = np.random.default_rng(0).standard_normal((2, 3, 4, 6)).astype(np.float32)
        y = interpret(imported.graph, {imported.inputs["x"]: x}, dict(imported.params))[imported.outputs["y"]]
        window_max = x.reshape(2, 3, 2, 2, 3, 2).max(axis=(3, 5))
        assert y.shape == (2, 3, 6, 7) and not y[:, :, 4:].any() and not y[:, :, :, 6:].any()
        np.testing.assert_array_equal(y[:, :, :4, :6].reshape(2, 3, 2, 2, 3, 2).max(axis=(3, 5)), window_max)
    assert "scatter_elements" in ops_of(imported)


def test_pool_over_four_spatial_dims_is_a_located_error():
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2, 2, 2], name="p4")
    model = make_model([node], [("x", F, [1, 1, 3, 3, 3, 3])], [("y", F, None)])
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'p4' \(MaxPool\): a 4-D MaxPool"):
        import_onnx(model)


def test_a_pad_under_max_pool_indices_is_not_folded():
    """The Indices number the padded tensor's cells, so the -inf Pad stays a tensor."""
    pad = helper.make_node("Pad", ["x", "pads", "low"], ["padded"])
    pool = helper.make_node("MaxPool", ["padded"], ["y", "i"], kernel_shape=[2, 2], strides=[2, 2])
    model = make_model([pad, pool], [("x", F, [1, 2, 4, 5])], [("y", F, None), ("i", I64, None)],
                       [("pads", np.array([0, 0, 1, 0, 0, 0, 1, 1], np.int64)),
                        ("low", np.array(-np.inf, np.float32))], opset=12)
    imported = check_everywhere(model)
    assert "concat" in ops_of(imported)


@pytest.mark.parametrize("op_type, opset, options, shape", [
    ("MaxPool", 1, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 0, 0]}, [1, 2, 7, 8]),
    ("MaxPool", 10, {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, [1, 2, 7, 8]),
    ("AveragePool", 7, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}, [1, 2, 7, 8]),
    ("AveragePool", 10, {"kernel_shape": [3], "strides": [2], "ceil_mode": 1}, [1, 2, 8]),
    ("LpPool", 2, {"kernel_shape": [2, 2], "p": 3}, [1, 2, 5, 6]),
    ("LpPool", 11, {"kernel_shape": [2, 2, 2], "auto_pad": "SAME_UPPER"}, [1, 2, 5, 6, 4]),
    ("GlobalLpPool", 2, {"p": 1}, [1, 2, 5, 6]),
], ids=["maxpool1", "maxpool10_ceil", "averagepool7", "averagepool10_1d_ceil", "lppool2", "lppool11_3d_same",
        "globallppool2"])
def test_pools_of_older_opsets(op_type, opset, options, shape):
    node = helper.make_node(op_type, ["x"], ["y"], **options)
    model = make_model([node], [("x", F, shape)], [("y", F, None)], opset=opset)
    model.ir_version = 3 if opset < 7 else 8
    check_everywhere(model)
