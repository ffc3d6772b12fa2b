"""ONNX If with a condition known while importing (folded to the taken branch) or computed at
run time (both branches and where), and Tile by counts that hold the batch symbol, against
onnxruntime and compiled on the six targets."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import_ops import make_model, ops_of, weights  # noqa: E402
from test_onnx_import_scatter import check_everywhere  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def compare_on(model, feeds, bindings=None, rtol=1e-5, atol=1e-6, **options):
    """Import `model` and compare its outputs on `feeds` (ONNX input name -> array) with
    onnxruntime's."""
    from onnx_models import run_onnxruntime

    from rlxir.interpreter import interpret

    imported = import_onnx(model, **options)
    want = run_onnxruntime(model, feeds)
    got = interpret(imported.graph, {imported.inputs[name]: value for name, value in feeds.items()
                                     if name in imported.inputs}, dict(imported.params), bindings)
    for (onnx_name, value), expected in zip(imported.outputs.items(), want):
        assert got[value].shape == expected.shape, onnx_name
        np.testing.assert_allclose(got[value], expected, rtol=rtol, atol=atol, err_msg=onnx_name)
    return imported


UNMAPPED = "com.example.Unmapped"
"""An op of a domain no converter knows (its op type is refused whatever the default domain maps)."""

NEVER_CONVERTED = "RandomNormalLike"
"""An op onnxruntime runs and rlxir never converts (it draws random numbers): a branch not
taken may hold it, since that branch is never converted."""


def _branch(name, op_type, output):
    """A branch computing `op_type`(x) from the outer x (ONNX scoping); ``domain.Op`` names
    an op outside the default domain."""
    domain, _, op = op_type.rpartition(".")
    return helper.make_graph([helper.make_node(op, ["x"], [output], domain=domain)], name, [],
                             [helper.make_tensor_value_info(output, F, None)])


def _if_model(condition_nodes, initializers, then_op="Relu", else_op="Neg"):
    nodes = condition_nodes + [
        helper.make_node("If", ["cond"], ["picked"], then_branch=_branch("then", then_op, "then_out"),
                         else_branch=_branch("else", else_op, "else_out"), name="if0"),
        helper.make_node("Add", ["picked", "x"], ["y"]),
    ]
    return make_model(nodes, [("x", F, ["N", 3, 4])], [("y", F, ["N", 3, 4])], initializers)


@pytest.mark.parametrize("rows, taken", [(3, "relu"), (5, "neg")])
def test_if_on_a_static_shape_check_takes_one_branch(rows, taken):
    """cond = (x.shape[1] == rows), evaluated from the static dim while importing."""
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "one"], ["dim"], axis=0),
             helper.make_node("Equal", ["dim", "rows"], ["cond"])]
    model = _if_model(nodes, [("one", np.array(1, np.int64)), ("rows", np.array(rows, np.int64))])
    imported = check_everywhere(model, {"B": 2})
    assert ops_of(imported) == [taken, "add"]


def test_if_branch_with_an_unsupported_op_is_refused_listing_it():
    model = _if_model([], [("cond", np.array(True))], then_op=UNMAPPED)
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'if0' \(If\).*no rlx mapping: com.example.Unmapped x1"):
        import_onnx(model)


def test_the_branch_not_taken_may_hold_anything():
    model = _if_model([], [("cond", np.array(False))], then_op=NEVER_CONVERTED)
    assert ops_of(check_everywhere(model, {"B": 2})) == ["neg", "add"]


def test_a_nested_branch_not_taken_may_hold_anything():
    """An If in the taken branch whose own condition is false never converts its then branch."""
    inner = helper.make_node("If", ["no"], ["inner_out"], then_branch=_branch("inner_then", NEVER_CONVERTED, "t_out"),
                             else_branch=_branch("inner_else", "Relu", "e_out"))
    outer_then = helper.make_graph([inner], "outer_then", [], [helper.make_tensor_value_info("inner_out", F, None)])
    nodes = [helper.make_node("If", ["yes"], ["picked"], then_branch=outer_then,
                              else_branch=_branch("outer_else", "Neg", "neg_out")),
             helper.make_node("Add", ["picked", "x"], ["y"])]
    model = make_model(nodes, [("x", F, ["N", 3, 4])], [("y", F, ["N", 3, 4])],
                       [("yes", np.array(True)), ("no", np.array(False))])
    assert ops_of(check_everywhere(model, {"B": 2})) == ["relu", "add"]


def test_if_on_a_run_time_condition_builds_both_branches_and_selects():
    """cond = sum(x) > 0, known only at run time: relu(x) or -x, chosen by where."""
    nodes = [helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
             helper.make_node("Greater", ["total", "zero"], ["cond"])]
    model = _if_model(nodes, [("zero", np.array(0, np.float32))])
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    for sign in (1, -1):  # both branches taken
        imported = compare_on(model, {"x": np.abs(x) * sign}, {"B": 2})
    assert {"relu", "neg", "where"} <= set(ops_of(imported))


def test_if_on_a_run_time_condition_compiles_on_every_target():
    nodes = [helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
             helper.make_node("Greater", ["total", "zero"], ["cond"])]
    check_everywhere(_if_model(nodes, [("zero", np.array(0, np.float32))]), {"B": 2})


def test_if_on_a_run_time_condition_with_branches_of_different_shapes_is_a_located_error():
    """The then branch keeps x's shape, the else branch reduces it: no where can pick."""
    nodes = [helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
             helper.make_node("Greater", ["total", "zero"], ["cond"])]
    model = _if_model(nodes, [("zero", np.array(0, np.float32))], else_op="ReduceMax")
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'if0' \(If\): its output 0 is f32\[B, 3, 4\] in the then "
                                               r"branch and f32\[1, 1, 1\] in the else branch"):
        import_onnx(model)


def test_tile_of_a_constant_to_the_batch():
    """A [1, 1, 4] token tiled by [batch, 1, 1] with the batch read from Shape(x)."""
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
             helper.make_node("Unsqueeze", ["batch", "axes"], ["batch1"]),
             helper.make_node("Concat", ["batch1", "ones"], ["repeats"], axis=0),
             helper.make_node("Tile", ["token", "repeats"], ["tokens"]),
             helper.make_node("Concat", ["tokens", "x"], ["y"], axis=1)]
    model = make_model(nodes, [("x", F, ["N", 3, 4])], [("y", F, ["N", 4, 4])],
                       [("token", weights(1, 1, 4)), ("zero", np.array(0, np.int64)),
                        ("axes", np.array([0], np.int64)), ("ones", np.array([1, 1], np.int64))])
    imported = check_everywhere(model, {"B": 3})
    assert ops_of(imported) == ["expand", "concat"]


def test_tile_repeating_whole_dims_and_broadcasting_unit_ones():
    node = helper.make_node("Tile", ["x", "repeats"], ["y"])
    model = make_model([node], [("x", F, ["N", 1, 3])], [("y", F, ["N", 4, 6])],
                       [("repeats", np.array([1, 4, 2], np.int64))])
    assert ops_of(check_everywhere(model, {"B": 2})) == ["expand", "concat"]


def test_tile_of_a_batch_of_rows_by_the_batch_repeats_the_whole_dim():
    """x [N, 3] tiled by its own shape [N, 3]: the rows N times over, then each row 3 times."""
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Tile", ["x", "shape"], ["y"], name="t0")]
    model = make_model(nodes, [("x", F, ["N", 3])], [("y", F, None)])
    imported = check_everywhere(model, {"B": 3})
    assert str(imported.graph.type(imported.outputs["y"])) == "f32[B*B, 9]"
    assert ops_of(imported) == ["reshape", "expand", "reshape", "concat"]


