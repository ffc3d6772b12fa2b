"""ONNX ops that select, build or reorder elements by position: Gather with negative
indices, Compress, Scatter (opset 9-10), EyeLike, OneHot, ReverseSequence, the Dropout
mask, Det, and Shape and Size of symbolic dims read as outputs; imported and run against
onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import_math import expected_outputs, run_imported  # noqa: E402
from test_onnx_import_ops import make_model, ops_of  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402

F, I64, I32, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL


def same_as_onnxruntime(model, feeds, bindings=None, reference=False):
    got, want = run_imported(model, feeds, bindings), expected_outputs(model, feeds, reference)
    assert len(got) == len(want)
    for have, expected in zip(got, want):
        assert have.shape == expected.shape and have.dtype == expected.dtype
        np.testing.assert_allclose(have, expected, rtol=1e-5, atol=1e-6)
    return got


def floats(*shape, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# --- Gather ----------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1])
def test_gather_wraps_run_time_negative_indices_on_symbolic_and_static_dims(axis):
    node = helper.make_node("Gather", ["x", "i"], ["y"], axis=axis)
    model = make_model([node], [("x", F, ["N", 4]), ("i", I64, [2, 3])], [("y", F, None)], opset=13)
    index = np.array([[0, -1, 2], [-3, 1, -2]], np.int64)
    same_as_onnxruntime(model, {"x": floats(5, 4), "i": index}, bindings={"B": 5})


# --- Compress --------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_compress_with_a_constant_condition(axis):
    condition = np.array([True, False, True], bool)
    node = helper.make_node("Compress", ["x", "c"], ["y"], **({} if axis is None else {"axis": axis}))
    model = make_model([node], [("x", F, [3, 3])], [("y", F, None)], [("c", condition)], opset=11)
    imported = import_onnx(model)
    assert ops_of(imported)[-1] == "gather"
    same_as_onnxruntime(model, {"x": floats(3, 3)}, bindings={"B": 3})


def test_compress_with_a_run_time_condition_is_refused():
    node = helper.make_node("Compress", ["x", "c"], ["y"], axis=1)
    model = make_model([node], [("x", F, [3, 3]), ("c", BOOL, [3])], [("y", F, None)], opset=11)
    with pytest.raises(UnsupportedModel, match=r"\(Compress\): its condition \(input 1\) must be known"):
        import_onnx(model)


# --- Scatter (opset 9-10) ------------------------------------------------------------------
def test_old_scatter_is_scatter_elements():
    node = helper.make_node("Scatter", ["x", "i", "u"], ["y"], axis=1)
    model = make_model([node], [("x", F, [2, 5]), ("i", I64, [2, 2]), ("u", F, [2, 2])], [("y", F, None)], opset=10)
    same_as_onnxruntime(model, {"x": floats(2, 5), "i": np.array([[1, 3], [0, -1]], np.int64), "u": floats(2, 2)},
                        bindings={"B": 2})


# --- EyeLike ---------------------------------------------------------------------------
@pytest.mark.parametrize("k", [0, 2, -1])
@pytest.mark.parametrize("dtype", [None, TensorProto.DOUBLE, TensorProto.INT32])
def test_eye_like_over_a_symbolic_batch(dtype, k):
    node = helper.make_node("EyeLike", ["x"], ["y"], k=k, **({} if dtype is None else {"dtype": dtype}))
    model = make_model([node], [("x", F, ["N", 5])], [("y", dtype or F, None)])
    assert "cumsum" in ops_of(import_onnx(model))
    same_as_onnxruntime(model, {"x": floats(3, 5)}, bindings={"B": 3})


def test_eye_like_of_static_dims_is_a_constant():
    nodes = [helper.make_node("ConstantOfShape", ["s"], ["z"]), helper.make_node("EyeLike", ["z"], ["e"], k=1),
             helper.make_node("Add", ["x", "e"], ["y"])]
    model = make_model(nodes, [("x", F, ["N", 3, 4])], [("y", F, None)], [("s", np.array([3, 4], np.int64))])
    assert ops_of(import_onnx(model)) == ["add"]
    same_as_onnxruntime(model, {"x": floats(2, 3, 4)}, bindings={"B": 2})


# --- OneHot ----------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("index_type", [I64, I32, F])
def test_one_hot_wraps_negative_indices_and_ignores_out_of_range_ones(index_type, axis):
    values = np.array([-2.0, 5.0], np.float32)
    node = helper.make_node("OneHot", ["i", "depth", "values"], ["y"], axis=axis)
    model = make_model([node], [("i", index_type, [2, 3])], [("y", F, None)],
                       [("depth", np.array(4, np.int64)), ("values", values)], opset=11)
    index = np.array([[0, 3, -1], [-4, 7, -5]]).astype({I64: np.int64, I32: np.int32, F: np.float32}[index_type])
    # onnxruntime has OneHot for int64 indices only; the reference evaluator for every type
    same_as_onnxruntime(model, {"i": index}, bindings={"B": 2}, reference=index_type != I64)


def test_one_hot_with_run_time_values():
    node = helper.make_node("OneHot", ["i", "depth", "values"], ["y"])
    model = make_model([node], [("i", I64, [3]), ("values", F, [2])], [("y", F, None)],
                       [("depth", np.array(3, np.int64))], opset=11)
    same_as_onnxruntime(model, {"i": np.array([2, 0, -1], np.int64), "values": np.array([0.5, 3.0], np.float32)},
                        bindings={"B": 3})


def test_one_hot_with_a_run_time_depth_is_refused():
    node = helper.make_node("OneHot", ["i", "depth", "values"], ["y"])
    model = make_model([node], [("i", I64, [3]), ("depth", I64, [1])], [("y", F, None)],
                       [("values", np.array([0.0, 1.0], np.float32))], opset=11)
    with pytest.raises(UnsupportedModel, match=r"its depth \(input 1\) must be known while importing"):
        import_onnx(model)


# --- ReverseSequence -------------------------------------------------------------------
@pytest.mark.parametrize("batch_axis, time_axis", [(1, 0), (0, 1)])
def test_reverse_sequence(batch_axis, time_axis):
    node = helper.make_node("ReverseSequence", ["x", "lens"], ["y"], batch_axis=batch_axis, time_axis=time_axis)
    shape = [4, 3, 2] if time_axis == 0 else [3, 4, 2]
    model = make_model([node], [("x", F, shape), ("lens", I64, [3])], [("y", F, None)], opset=10)
    same_as_onnxruntime(model, {"x": floats(*shape), "lens": np.array([4, 1, 2], np.int64)},
                        bindings={"B": shape[0]})


def test_reverse_sequence_of_a_vector_is_refused():
    node = helper.make_node("ReverseSequence", ["x", "lens"], ["y"], batch_axis=0, time_axis=0)
    model = make_model([node], [("x", F, [4])], [("y", F, None)], [("lens", np.array([4], np.int64))], opset=10)
    with pytest.raises(UnsupportedModel, match="ReverseSequence of a rank-1 input"):
        import_onnx(model)


# --- Dropout ---------------------------------------------------------------------------
@pytest.mark.parametrize("opset", [10, 13])
def test_dropout_mask_at_inference_is_all_true(opset):
    """As the ONNX reference and the conformance suite have it (onnxruntime returns all false)."""
    node = helper.make_node("Dropout", ["x"], ["y", "mask"])
    model = make_model([node], [("x", F, [2, 3])], [("y", F, None), ("mask", BOOL, None)], opset=opset)
    got = same_as_onnxruntime(model, {"x": floats(2, 3)}, bindings={"B": 2}, reference=True)
    assert got[1].all()


def test_dropout_in_training_mode_is_refused_unless_its_ratio_is_zero():
    node = helper.make_node("Dropout", ["x", "ratio", "training"], ["y", "mask"])
    for ratio, refused in ((0.3, True), (0.0, False)):
        model = make_model([node], [("x", F, [2, 3])], [("y", F, None), ("mask", BOOL, None)],
                           [("ratio", np.array(ratio, np.float32)), ("training", np.array(True))], opset=13)
        if refused:
            with pytest.raises(UnsupportedModel, match="Dropout in training mode"):
                import_onnx(model)
        else:
            same_as_onnxruntime(model, {"x": floats(2, 3)}, bindings={"B": 2}, reference=True)


# --- Det -------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_det_by_cofactors(size):
    node = helper.make_node("Det", ["x"], ["y"])
    model = make_model([node], [("x", F, [3, 2, size, size])], [("y", F, None)], opset=11)
    x = floats(3, 2, size, size, seed=size)
    got = same_as_onnxruntime(model, {"x": x}, bindings={"B": 3})
    np.testing.assert_allclose(got[0], np.linalg.det(x.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_det_of_a_large_matrix_is_refused():
    node = helper.make_node("Det", ["x"], ["y"])
    model = make_model([node], [("x", F, [2, 5, 5])], [("y", F, None)], opset=11)
    with pytest.raises(UnsupportedModel, match="Det of 5x5 matrices"):
        import_onnx(model)


# --- Shape and Size read as outputs ---------------------------------------------------------
@pytest.mark.parametrize("op, attributes", [("Shape", {}), ("Shape", {"start": 0, "end": 2}), ("Size", {})])
def test_shape_and_size_of_the_batch_symbol_as_graph_outputs_are_counted_at_run_time(op, attributes):
    model = make_model([helper.make_node(op, ["x"], ["y"], **attributes)], [("x", F, ["N", 3, 4])], [("y", I64, None)],
                       opset=15)
    assert "reduce_sum" in ops_of(import_onnx(model))
    for batch in (2, 5):
        same_as_onnxruntime(model, {"x": floats(batch, 3, 4)}, bindings={"B": batch})


def test_shape_read_by_shape_arithmetic_stays_static():
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Reshape", ["x", "s"], ["y"])]
    model = make_model(nodes, [("x", F, ["N", 3])], [("y", F, None)], opset=15)
    assert ops_of(import_onnx(model)) == []


# --- NonZero and Unique ----------------------------------------------------------------
def test_nonzero_of_constants_is_evaluated_while_importing():
    mask = np.array([[1, 0, 2], [0, 0, 3]], np.float32)
    nodes = [helper.make_node("NonZero", ["m"], ["p"]), helper.make_node("Cast", ["p"], ["pf"], to=F),
             helper.make_node("ReduceSum", ["pf"], ["s"], keepdims=0), helper.make_node("Mul", ["x", "s"], ["y"])]
    model = make_model(nodes, [("x", F, [2])], [("y", F, None)], [("m", mask)], opset=13)
    assert ops_of(import_onnx(model)) == ["mul"]
    same_as_onnxruntime(model, {"x": floats(2)}, bindings={"B": 2})


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("sorted_", [0, 1])
def test_unique_of_constants_is_evaluated_while_importing(sorted_, axis):
    table = np.array([[2, 1, 2], [0, 5, 0], [2, 1, 2]], np.float32)
    outputs = ["u", "first", "inverse", "counts"]
    nodes = [helper.make_node("Unique", ["t"], outputs, sorted=sorted_, **({} if axis is None else {"axis": axis}))]
    nodes += [helper.make_node("Add", ["u", "x"], ["y"])]
    model = make_model(nodes, [("x", F, [1, 1, 1])], [("y", F, None)] + [(name, TensorProto.INT64, None)
                                                                   for name in outputs[1:]], [("t", table)], opset=11)
    got = same_as_onnxruntime(model, {"x": np.zeros((1, 1, 1), np.float32)}, bindings={"B": 1})
    assert len(got) == 4


def test_nonzero_of_a_run_time_tensor_is_refused():
    model = make_model([helper.make_node("NonZero", ["x"], ["y"])], [("x", F, [3, 4])], [("y", I64, None)], opset=13)
    with pytest.raises(UnsupportedModel, match="NonZero of a tensor computed at run time"):
        import_onnx(model)
