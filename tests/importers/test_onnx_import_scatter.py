"""ONNX ScatterND, ScatterElements, TopK, Trilu and Range: imported, run against onnxruntime,
and compiled on the six targets."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import_ops import check, make_model, ops_of  # noqa: E402

from rlxir.compiler.compile import compile  # noqa: E402
from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64
TARGETS = ("cpu", "cuda", "rocm", "metal", "gpu", "vulkan")


def check_everywhere(model, bindings=None, **options):
    """`check` against onnxruntime, then compile on every target."""
    imported = check(model, bindings=bindings, **options)
    for target in TARGETS:
        result = compile(imported.graph, target, bindings or {})
        assert result.arena_bytes >= result.lower_bound_bytes > 0, target
    return imported


# --- ScatterND -------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd_writes_slices_of_the_leading_axes(reduction):
    """Two leading axes indexed (one index negative), [5]-slices written at each row."""
    indices = np.array([[[0, 1], [2, -1]], [[1, 0], [0, 2]]], np.int64)  # [2, 2, 2]: rows into [3, 4]
    node = helper.make_node("ScatterND", ["data", "idx", "updates"], ["y"], reduction=reduction)
    model = make_model([node], [("data", F, [3, 4, 5]), ("updates", F, [2, 2, 5])], [("y", F, [3, 4, 5])],
                       [("idx", indices)], opset=18)
    imported = check_everywhere(model)
    assert "scatter_elements" in ops_of(imported)


@pytest.mark.parametrize("reduction", ["add", "max"])
def test_scatter_nd_with_run_time_indices(reduction):
    """Indices fed as an input (random rows in 0..3, repeats included: add and max count them all)."""
    node = helper.make_node("ScatterND", ["data", "idx", "updates"], ["y"], reduction=reduction)
    model = make_model([node], [("data", F, [4, 4, 3]), ("idx", I64, [6, 2]), ("updates", F, [6, 3])],
                       [("y", F, [4, 4, 3])], opset=18)
    imported = check_everywhere(model)
    assert "slice" in ops_of(imported)  # the index columns, split at run time


def test_scatter_nd_into_the_batch_axis():
    node = helper.make_node("ScatterND", ["data", "idx", "updates"], ["y"])
    model = make_model([node], [("data", F, ["N", 4, 5]), ("updates", F, [1, 4, 5])], [("y", F, ["N", 4, 5])],
                       [("idx", np.array([[1]], np.int64))])
    check_everywhere(model, {"B": 2})


def test_scatter_nd_of_single_elements():
    indices = np.array([[0, 1, 2], [1, 0, 3]], np.int64)  # whole-rank index rows
    node = helper.make_node("ScatterND", ["data", "idx", "updates"], ["y"])
    model = make_model([node], [("data", F, ["N", 2, 4]), ("updates", F, [2])], [("y", F, ["N", 2, 4])],
                       [("idx", indices)])
    check_everywhere(model, {"B": 2})


def test_scatter_nd_of_constants_folds():
    """The shifted-window mask pattern: zeros with blocks of constants written into them."""
    nodes = [helper.make_node("ScatterND", ["zeros", "idx", "updates"], ["mask"]),
             helper.make_node("Add", ["x", "mask"], ["y"])]
    indices = np.array([[1], [3]], np.int64)
    model = make_model(nodes, [("x", F, ["N", 4, 6])], [("y", F, ["N", 4, 6])],
                       [("zeros", np.zeros((4, 6), np.float32)), ("idx", indices),
                        ("updates", np.full((2, 6), -100.0, np.float32))])
    imported = check(model, {"B": 2})
    assert ops_of(imported) == ["add"]


def test_scatter_nd_with_an_unknown_index_depth_is_a_located_error():
    node = helper.make_node("ScatterND", ["data", "idx", "updates"], ["y"], name="s0")
    model = make_model([node], [("data", F, [3, 4]), ("idx", I64, None), ("updates", F, None)], [("y", F, [3, 4])])
    with pytest.raises(UnsupportedModel, match=r"ONNX node 's0' \(ScatterND\).*indices"):
        import_onnx(model)


# --- ScatterElements -------------------------------------------------------------------
@pytest.mark.parametrize("axis, reduction", [(1, "none"), (-1, "add"), (0, "max")])
def test_scatter_elements(axis, reduction):
    indices = np.array([[0, -1, 2], [3, 1, 0]], np.int64) if axis else np.array([[1, 0, 2], [0, 2, 1]], np.int64)
    node = helper.make_node("ScatterElements", ["data", "idx", "updates"], ["y"], axis=axis, reduction=reduction)
    model = make_model([node], [("data", F, [3, 4]), ("updates", F, [2, 3])], [("y", F, [3, 4])],
                       [("idx", indices)], opset=18)
    imported = check_everywhere(model, batch_dim="N")
    assert "scatter_elements" in ops_of(imported)


def test_scatter_elements_with_an_unknown_reduction_is_a_located_error():
    node = helper.make_node("ScatterElements", ["data", "idx", "updates"], ["y"], reduction="mean", name="se")
    model = make_model([node], [("data", F, [3, 4]), ("updates", F, [2, 3])], [("y", F, [3, 4])],
                       [("idx", np.zeros((2, 3), np.int64))], opset=18)
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'se' \(ScatterElements\): reduction 'mean'"):
        import_onnx(model)


# --- TopK ------------------------------------------------------------------------------
@pytest.mark.parametrize("axis, largest", [(-1, 1), (1, 0)])
def test_topk_values_and_indices(axis, largest):
    node = helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=axis, largest=largest)
    model = make_model([node], [("x", F, ["N", 6, 7])], [("values", F, None), ("indices", I64, None)],
                       [("k", np.array([3], np.int64))])
    imported = check_everywhere(model, {"B": 2})
    assert ops_of(imported) == ["topk", "gather_elements"]


def test_topk_with_a_computed_k_is_a_located_error():
    node = helper.make_node("TopK", ["x", "k"], ["values", "indices"], name="t0")
    model = make_model([node], [("x", F, [2, 6]), ("k", I64, [1])], [("values", F, None), ("indices", I64, None)])
    with pytest.raises(UnsupportedModel, match=r"ONNX node 't0' \(TopK\).*k \(input 1\) must be known"):
        import_onnx(model)


# --- Trilu -----------------------------------------------------------------------------
@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, -1, 2])
def test_trilu(upper, k):
    inputs = ["x", "k"] if k is not None else ["x"]
    initializers = [("k", np.array(k, np.int64))] if k is not None else []
    node = helper.make_node("Trilu", inputs, ["y"], upper=upper)
    model = make_model([node], [("x", F, ["N", 5, 7])], [("y", F, ["N", 5, 7])], initializers, opset=14)
    imported = check_everywhere(model, {"B": 2})
    assert "where" in ops_of(imported)


def test_trilu_of_a_constant_folds_into_a_causal_mask():
    nodes = [helper.make_node("Trilu", ["ones"], ["mask"], upper=0), helper.make_node("Mul", ["x", "mask"], ["y"])]
    model = make_model(nodes, [("x", F, ["N", 4, 4])], [("y", F, ["N", 4, 4])],
                       [("ones", np.ones((4, 4), np.float32))], opset=14)
    imported = check(model, {"B": 2})
    assert ops_of(imported) == ["mul"]


# --- Range -----------------------------------------------------------------------------
def test_range_of_constants_folds():
    nodes = [helper.make_node("Range", ["start", "limit", "delta"], ["r"]), helper.make_node("Add", ["x", "r"], ["y"])]
    model = make_model(nodes, [("x", F, ["N", 4])], [("y", F, ["N", 4])],
                       [("start", np.array(0.5, np.float32)), ("limit", np.array(2.5, np.float32)),
                        ("delta", np.array(0.5, np.float32))])
    imported = check_everywhere(model, {"B": 2})
    assert ops_of(imported) == ["add"]


def test_range_over_the_batch_counts_up():
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
             helper.make_node("Range", ["zero", "n", "one"], ["r"]),
             helper.make_node("Cast", ["r"], ["rf"], to=F),
             helper.make_node("Unsqueeze", ["rf", "axes"], ["column"]),
             helper.make_node("Add", ["x", "column"], ["y"])]
    model = make_model(nodes, [("x", F, ["N", 3])], [("y", F, ["N", 3])],
                       [("zero", np.array(0, np.int64)), ("one", np.array(1, np.int64)),
                        ("axes", np.array([1], np.int64))])
    imported = check_everywhere(model, {"B": 3})
    assert "cumsum" in ops_of(imported)


def test_range_with_run_time_bounds_is_a_located_error():
    node = helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="r0")
    model = make_model([node], [("start", I64, []), ("limit", I64, []), ("delta", I64, [])], [("y", I64, None)])
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'r0' \(Range\).*start \(input 0\) must be known"):
        import_onnx(model)

