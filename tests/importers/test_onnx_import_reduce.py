"""ONNX reductions, arg-reductions and scans: imported, run against onnxruntime (the onnx
reference evaluator for ops newer than it), with axes as attributes and as inputs."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from test_onnx_import_math import ELEMENT, expected_outputs, run_imported  # noqa: E402
from test_onnx_import_ops import make_model, ops_of  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402

REDUCTIONS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
              "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"]


def reduction_model(op: str, x: np.ndarray, axes, opset: int, **attributes):
    """One reduction of input x ([N, ...] when the first dim is the batch), its axes an
    initializer input from the opset that made them one, an attribute before it."""
    axes_input = opset >= (13 if op == "ReduceSum" else 18)
    inputs, initializers = ["x"], []
    if axes is not None and axes_input:
        inputs.append("axes")
        initializers.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
    elif axes is not None:
        attributes["axes"] = axes
    node = helper.make_node(op, inputs, ["y"], **attributes)
    graph = helper.make_graph([node], "t", [helper.make_tensor_value_info("x", ELEMENT[x.dtype], list(x.shape))],
                              [helper.make_tensor_value_info("y", ELEMENT[x.dtype], None)], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def same_as_onnx(model, feeds, reference=False, rtol=1e-5, atol=1e-6, bindings=None):
    got, want = run_imported(model, feeds, bindings), expected_outputs(model, feeds, reference)
    for have, expected in zip(got, want):
        assert have.shape == expected.shape and have.dtype == expected.dtype
        np.testing.assert_allclose(have, expected, rtol=rtol, atol=atol)
    return got


def positive(*shape, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.2, 1.5, shape).astype(np.float32)


@pytest.mark.parametrize("opset", [17, 18])
@pytest.mark.parametrize("axes, keepdims", [([1], 1), ([0, 2], 0), ([-1], 0), (None, 1), (None, 0)])
@pytest.mark.parametrize("op", REDUCTIONS)
def test_reductions_over_axes_by_opset(op, axes, keepdims, opset):
    x = positive(3, 4, 5) * np.where(np.random.default_rng(1).random((3, 4, 5)) < 0.3, -1, 1).astype(np.float32)
    if op == "ReduceLogSum":
        x = np.abs(x)
    same_as_onnx(reduction_model(op, x, axes, opset, keepdims=keepdims), {"x": x})


@pytest.mark.parametrize("op", REDUCTIONS)
def test_noop_with_empty_axes_applies_only_the_elementwise_step(op):
    x = positive(2, 3)
    same_as_onnx(reduction_model(op, x, None, 18, noop_with_empty_axes=1), {"x": x}, reference=True)


@pytest.mark.parametrize("op", ["ReduceProd", "ReduceSumSquare", "ReduceL1", "ReduceL2"])
def test_integer_reductions_are_exact(op):
    x = np.random.default_rng(2).integers(-3, 4, (2, 3, 4)).astype(np.int64)
    got = same_as_onnx(reduction_model(op, x, [1, 2], 18, keepdims=0), {"x": x}, rtol=0, atol=0)
    assert got[0].dtype == np.int64


def test_reduce_prod_over_a_static_axis_multiplies_halves():
    x = positive(2, 7, 3)
    imported = import_onnx(reduction_model("ReduceProd", x, [1], 18, keepdims=1))
    assert "exp" not in ops_of(imported) and ops_of(imported).count("mul") == 3  # 7 -> 4 -> 2 -> 1


def test_reduce_prod_over_the_batch_symbol_goes_through_logs():
    """A product over the symbolic batch dim is sign * exp(sum(log |x|)) (zeros and signs kept)."""
    x = np.array([[0.5, -2.0, 0.0], [3.0, 1.5, 4.0], [-1.0, -1.0, 2.0]], np.float32)
    node = helper.make_node("ReduceProd", ["x", "axes"], ["y"], keepdims=0)
    model = make_model([node], [("x", TensorProto.FLOAT, ["N", 3])], [("y", TensorProto.FLOAT, None)],
                       [("axes", np.array([0], np.int64))], opset=18)
    assert "exp" in ops_of(import_onnx(model))
    same_as_onnx(model, {"x": x}, bindings={"B": 3})


def test_reduce_prod_of_integers_over_the_batch_symbol_is_refused():
    node = helper.make_node("ReduceProd", ["x", "axes"], ["y"])
    model = make_model([node], [("x", TensorProto.INT32, ["N", 3])], [("y", TensorProto.INT32, None)],
                       [("axes", np.array([0], np.int64))], opset=18)
    with pytest.raises(UnsupportedModel, match=r"ReduceProd of a i32 tensor over the symbolic dims \[B\]"):
        import_onnx(model)


def test_log_sum_exp_neither_overflows_nor_loses_minus_infinity():
    x = np.array([[1000.0, 999.0, -np.inf], [-np.inf, -np.inf, -np.inf], [0.5, 2.0, -1.0]], np.float32)
    (got,) = run_imported(reduction_model("ReduceLogSumExp", x, [1], 18, keepdims=0), {"x": x})
    np.testing.assert_allclose(got, [1000.0 + np.log1p(np.exp(-1.0)), -np.inf, np.log(np.exp(x[2]).sum())],
                               rtol=1e-6)


def test_reduction_axis_out_of_range_is_refused():
    with pytest.raises(UnsupportedModel, match="ReduceL2 over axis 3 of a rank-2 input"):
        import_onnx(reduction_model("ReduceL2", positive(2, 3), [3], 18))


# --- ArgMax / ArgMin -----------------------------------------------------------------------
@pytest.mark.parametrize("last", [0, 1])
@pytest.mark.parametrize("axis, keepdims", [(0, 1), (1, 0), (-1, 1)])
@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_reductions_with_ties(op, axis, keepdims, last):
    x = np.random.default_rng(3).integers(0, 3, (4, 5)).astype(np.float32)  # many ties
    node = helper.make_node(op, ["x"], ["y"], axis=axis, keepdims=keepdims, select_last_index=last)
    model = make_model([node], [("x", TensorProto.FLOAT, [4, 5])], [("y", TensorProto.INT64, None)], opset=13)
    same_as_onnx(model, {"x": x}, rtol=0, atol=0)


@pytest.mark.parametrize("last", [0, 1])
@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_reductions_answer_a_nan_as_numpy_does(op, last):
    x = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 5.0, 5.0, -1.0], [np.inf, 0.0, np.inf, -np.inf]], np.float32)
    node = helper.make_node(op, ["x"], ["y"], axis=1, keepdims=0, select_last_index=last)
    model = make_model([node], [("x", TensorProto.FLOAT, [3, 4])], [("y", TensorProto.INT64, None)], opset=13)
    (got,) = run_imported(model, {"x": x}, {"B": 3})
    search = np.argmax if op == "ArgMax" else np.argmin
    expected = 3 - search(x[:, ::-1], axis=1) if last else search(x, axis=1)
    assert np.array_equal(got, expected)


@pytest.mark.parametrize("target", ["rocm", "cuda", "gpu"])
def test_float_arg_reductions_run_exactly_where_i64_is_stored_in_4_bytes(target):
    """These targets size every value at 4 bytes: the position's "no hit" stand-in must fit."""
    import rlxir

    x = np.random.default_rng(5).standard_normal((6, 5)).astype(np.float32)
    node = helper.make_node("ArgMax", ["x"], ["y"], axis=1, keepdims=0)
    imported = import_onnx(make_model([node], [("x", TensorProto.FLOAT, [6, 5])], [("y", TensorProto.INT64, None)],
                                      opset=13))
    check = rlxir.check_execution(imported.graph, rlxir.compile(imported.graph, target),
                                  inputs={imported.inputs["x"]: x})
    assert check.matched
    assert np.array_equal(check.run.outputs[imported.outputs["y"]], x.argmax(1))


# --- scans ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("exclusive, reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("axis, size", [(1, 1), (1, 5), (1, 8), (-2, 3)])
def test_cumprod(axis, size, exclusive, reverse, dtype):
    x = np.random.default_rng(4).integers(-3, 4, (3, size, 2)).astype(dtype)
    node = helper.make_node("CumProd", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)
    model = make_model([node], [("x", ELEMENT[np.dtype(dtype)], list(x.shape))], [("y", ELEMENT[np.dtype(dtype)], None)],
                       [("axis", np.array(axis, np.int64))], opset=26)
    same_as_onnx(model, {"x": x}, reference=True, rtol=0, atol=0)


@pytest.mark.parametrize("exclusive, reverse", [(0, 1), (1, 1), (1, 0)])
def test_cumsum_directions(exclusive, reverse):
    x = positive(3, 4)
    node = helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)
    model = make_model([node], [("x", TensorProto.FLOAT, [3, 4])], [("y", TensorProto.FLOAT, None)],
                       [("axis", np.array(1, np.int64))], opset=14)
    same_as_onnx(model, {"x": x})


def test_cumprod_along_the_batch_symbol_is_refused():
    node = helper.make_node("CumProd", ["x", "axis"], ["y"])
    model = make_model([node], [("x", TensorProto.FLOAT, ["N", 3])], [("y", TensorProto.FLOAT, None)],
                       [("axis", np.array(0, np.int64))], opset=26)
    with pytest.raises(UnsupportedModel, match="CumProd along the symbolic dim B"):
        import_onnx(model)


@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("op", REDUCTIONS)
def test_a_reduction_over_an_empty_axis_is_its_identity(op, keepdims):
    x = np.zeros((2, 0, 4), np.float32)
    model = reduction_model(op, x, [1], 18, keepdims=keepdims)
    assert ops_of(import_onnx(model)) == []  # one splat const
    same_as_onnx(model, {"x": x}, reference=True, bindings={"B": 2})


@pytest.mark.parametrize("dtype", [np.int32, np.bool_])
def test_max_and_min_over_an_empty_axis_of_integers_and_bools(dtype):
    x = np.zeros((2, 0, 3), dtype)
    for op in ("ReduceMax", "ReduceMin"):
        same_as_onnx(reduction_model(op, x, [1], 20, keepdims=0), {"x": x}, reference=True, bindings={"B": 2})
