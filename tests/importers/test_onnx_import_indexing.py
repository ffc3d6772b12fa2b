"""ONNX GatherElements, Mod and Expand of constants to symbolic shapes, against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import_ops import check, make_model, ops_of, weights  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64


@pytest.mark.parametrize("batch", ["N", 3])
def test_gather_elements_with_negative_indices(batch):
    indices = np.array([[[0, -1, 2], [3, 1, -4]]], np.int64)
    node = helper.make_node("GatherElements", ["x", "idx"], ["y"], axis=2)
    model = make_model([node], [("x", F, [batch, 2, 4])], [("y", F, [1, 2, 3])], [("idx", indices)])
    imported = check(model, bindings={"B": 3})
    assert "gather_elements" in ops_of(imported)


@pytest.mark.parametrize("fmod, kind", [(0, I64), (1, F)])
def test_mod_signs_follow_onnx(fmod, kind):
    divisors = np.array([3, -3, 5, -2], np.int64 if kind == I64 else np.float32)
    model = make_model([helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)],
                       [("a", kind, ["N", 4])], [("y", kind, ["N", 4])], [("b", divisors)])
    imported = check(model, bindings={"B": 2})
    assert ("fmod" if fmod else "mod") in ops_of(imported)


def test_float_mod_without_fmod_is_a_located_error():
    model = make_model([helper.make_node("Mod", ["a", "b"], ["y"], name="m0")],
                       [("a", F, ["N", 4]), ("b", F, [4])], [("y", F, ["N", 4])])
    from rlxir.importers import UnsupportedModel
    from rlxir.importers.onnx import import_onnx

    with pytest.raises(UnsupportedModel, match=r"ONNX node 'm0' \(Mod\).*fmod"):
        import_onnx(model)


def test_constant_expanded_to_the_batch_symbol():
    """A class token (a param) expanded to [batch, 1, D] taken from Shape(x)."""
    nodes = [
        helper.make_node("Shape", ["x"], ["x_shape"]),
        helper.make_node("Gather", ["x_shape", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes"], ["batch1"]),
        helper.make_node("Concat", ["batch1", "rest"], ["target"], axis=0),
        helper.make_node("Expand", ["token", "target"], ["tokens"]),
        helper.make_node("Concat", ["tokens", "x"], ["y"], axis=1),
    ]
    model = make_model(nodes, [("x", F, ["N", 5, 8])], [("y", F, ["N", 6, 8])],
                       [("token", weights(1, 1, 8)), ("zero", np.array(0, np.int64)),
                        ("axes", np.array([0], np.int64)), ("rest", np.array([1, 8], np.int64))])
    imported = check(model, bindings={"B": 2})
    assert "expand" in ops_of(imported)


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cumsum_exclusive_and_reverse(exclusive, reverse):
    node = helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)
    model = make_model([node], [("x", F, ["N", 5])], [("y", F, ["N", 5])], [("axis", np.array(1, np.int64))])
    imported = check(model, bindings={"B": 2})
    assert "cumsum" in ops_of(imported)


@pytest.mark.parametrize("op_type, core", [("Floor", "floor"), ("Ceil", "ceil")])
def test_floor_and_ceil(op_type, core):
    model = make_model([helper.make_node(op_type, ["x"], ["y"])], [("x", F, ["N", 6])], [("y", F, ["N", 6])])
    imported = check(model, bindings={"B": 3})
    assert core in ops_of(imported)


def test_isnan_is_a_self_comparison():
    """IsNaN of sqrt(x) (NaN where x < 0): `ne(x, x)` is true exactly there."""
    nodes = [helper.make_node("Sqrt", ["x"], ["q"]), helper.make_node("IsNaN", ["q"], ["y"])]
    model = make_model(nodes, [("x", F, ["N", 16])], [("y", TensorProto.BOOL, ["N", 16])])
    imported = check(model, bindings={"B": 2})
    assert "ne" in ops_of(imported)


@pytest.mark.parametrize("batch", ["N", 3])
def test_gather_nd_of_whole_elements_and_of_rows(batch):
    """Full-depth indices (the causal-mask lookup the dynamo exporter writes for LLMs) and
    depth-1 indices (rows); a negative index wraps on the static axis (negative indices into
    a symbolic dim are not wrapped: docs/importers.md)."""
    full = np.array([[[0, 1], [2, -1]], [[1, 3], [0, 0]]], np.int64)
    rows = np.array([[1], [2]], np.int64)
    nodes = [helper.make_node("GatherND", ["x", "full"], ["y"]), helper.make_node("GatherND", ["x", "rows"], ["z"])]
    model = make_model(nodes, [("x", F, [batch, 4])], [("y", F, [2, 2]), ("z", F, [2, 4])],
                       [("full", full), ("rows", rows)])
    imported = check(model, bindings={"B": 3})
    assert "gather" in ops_of(imported)


@pytest.mark.parametrize("batch", ["N", 2])
def test_gather_nd_with_batch_dims(batch):
    """batch_dims=1: each batch row gathers from its own slice of data (rows of [4, 3]
    addressed by 1 index, single elements by 2, negative ones wrapped)."""
    for indices in (np.array([[[1], [-1]], [[0], [2]]], np.int64),
                    np.array([[[1, 2], [3, -1]], [[0, 0], [-2, 1]]], np.int64)):
        node = helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=1)
        model = make_model([node], [("x", F, [batch, 4, 3])], [("y", F, None)], [("i", indices)])
        check(model, bindings={"B": 2})


def test_gather_nd_with_too_many_batch_dims_is_a_located_error():
    node = helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=2, name="g0")
    model = make_model([node], [("x", F, [2, 4, 3]), ("i", I64, [2, 1])], [("y", F, None)])
    from rlxir.importers import UnsupportedModel
    from rlxir.importers.onnx import import_onnx

    with pytest.raises(UnsupportedModel, match=r"ONNX node 'g0' \(GatherND\): GatherND with batch_dims=2"):
        import_onnx(model)


@pytest.mark.parametrize("start, end, step", [(0, 9, 2), (1, 8, 3), (-1, -10, -1), (8, 0, -2)])
def test_slice_with_any_step_on_a_static_dim(start, end, step):
    inputs = [("x", F, ["N", 9, 3])]
    arrays = [("s", np.array([start], np.int64)), ("e", np.array([end], np.int64)),
              ("a", np.array([1], np.int64)), ("p", np.array([step], np.int64))]
    node = helper.make_node("Slice", ["x", "s", "e", "a", "p"], ["y"])
    model = make_model([node], inputs, [("y", F, None)], arrays)
    imported = check(model, bindings={"B": 2})
    assert "gather" in ops_of(imported)
