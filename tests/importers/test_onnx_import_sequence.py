"""ONNX sequence ops on sequences known while importing (held by the import, never in the
graph), against onnxruntime; a sequence as a graph output and a run-time position are
refused."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import_control import compare_on  # noqa: E402
from test_onnx_import_ops import make_model, ops_of  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64
RNG = np.random.default_rng(0)
XYZ = {name: RNG.standard_normal((2, 3, 4)).astype(np.float32) for name in ("x", "y", "z")}
INPUTS = [(name, F, ["N", 3, 4]) for name in ("x", "y", "z")]


def _positions(**values):
    return [(name, np.array(value, np.int64)) for name, value in values.items()]


@pytest.mark.parametrize("insert_at, erase_at, read_at", [(1, 0, 1), (-1, -3, -1), (2, 2, 0)])
def test_construct_insert_erase_at(insert_at, erase_at, read_at):
    nodes = [helper.make_node("SequenceEmpty", [], ["empty"], dtype=F),
             helper.make_node("SequenceInsert", ["empty", "x"], ["one"]),
             helper.make_node("SequenceConstruct", ["y", "z"], ["two"]),
             helper.make_node("SequenceInsert", ["two", "x", "insert_at"], ["three"]),
             helper.make_node("SequenceErase", ["three", "erase_at"], ["erased"]),
             helper.make_node("SequenceAt", ["erased", "read_at"], ["picked"]),
             helper.make_node("SequenceAt", ["one", "zero"], ["first"]),
             helper.make_node("Add", ["picked", "first"], ["out"])]
    model = make_model(nodes, INPUTS, [("out", F, None)],
                       _positions(insert_at=insert_at, erase_at=erase_at, read_at=read_at, zero=0), opset=17)
    assert ops_of(compare_on(model, XYZ, {"B": 2})) == ["add"]


@pytest.mark.parametrize("axis, new_axis", [(1, 0), (-1, 0), (0, 1), (-1, 1), (2, 1)])
def test_concat_from_sequence(axis, new_axis):
    nodes = [helper.make_node("SequenceConstruct", ["x", "y", "z"], ["all"]),
             helper.make_node("ConcatFromSequence", ["all"], ["out"], axis=axis, new_axis=new_axis)]
    model = make_model(nodes, INPUTS, [("out", F, None)], opset=17)
    compare_on(model, XYZ, {"B": 2})


@pytest.mark.parametrize("split, keepdims", [(None, 1), (None, 0), (np.array(3, np.int64), 1),
                                             (np.array([1, 3], np.int64), 1)])
def test_split_to_sequence_and_back(split, keepdims):
    """x [N, 3, 4] split on its last axis, its length and chunks read back."""
    inputs = ["x"] + (["split"] if split is not None else [])
    nodes = [helper.make_node("SplitToSequence", inputs, ["parts"], axis=-1, keepdims=keepdims),
             helper.make_node("SequenceLength", ["parts"], ["count"]),
             helper.make_node("ConcatFromSequence", ["parts"], ["joined"], axis=-1, new_axis=1 - keepdims),
             helper.make_node("SequenceAt", ["parts", "last"], ["tail"])]
    initializers = _positions(last=-1) + ([("split", split)] if split is not None else [])
    model = make_model(nodes, [INPUTS[0]], [("count", I64, []), ("joined", F, None), ("tail", F, None)],
                       initializers, opset=17)
    compare_on(model, {"x": XYZ["x"]}, {"B": 2})


def test_sequence_map_runs_its_body_per_element():
    """Rows of x mapped through relu(row) + bias, joined again."""
    body = helper.make_graph([helper.make_node("Relu", ["row"], ["positive"]),
                              helper.make_node("Add", ["positive", "bias_in"], ["moved"])], "map",
                             [helper.make_tensor_value_info("row", F, None),
                              helper.make_tensor_value_info("bias_in", F, None)],
                             [helper.make_tensor_value_info("moved", F, None)])
    nodes = [helper.make_node("SplitToSequence", ["x"], ["rows"], axis=1, keepdims=0),
             helper.make_node("SequenceMap", ["rows", "bias"], ["mapped"], body=body),
             helper.make_node("ConcatFromSequence", ["mapped"], ["out"], axis=1, new_axis=1)]
    model = make_model(nodes, [INPUTS[0], ("bias", F, [4])], [("out", F, None)], opset=17)
    imported = compare_on(model, {"x": XYZ["x"], "bias": np.arange(4, dtype=np.float32)}, {"B": 2})
    assert ops_of(imported).count("relu") == 3


def test_a_sequence_as_graph_output_is_a_located_error():
    nodes = [helper.make_node("SequenceConstruct", ["x", "y"], ["both"], name="make0")]
    model = make_model(nodes, INPUTS[:2], [])
    model.graph.output.append(helper.make_tensor_sequence_value_info("both", F, None))
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'make0' \(SequenceConstruct\): the sequence 'both' is a "
                                               r"graph output, and the IR has no sequence type"):
        import_onnx(model)


def test_a_position_computed_at_run_time_is_a_located_error():
    nodes = [helper.make_node("SequenceConstruct", ["x", "y"], ["both"]),
             helper.make_node("SequenceAt", ["both", "where"], ["out"], name="at0")]
    model = make_model(nodes, INPUTS[:2] + [("where", I64, [])], [("out", F, None)])
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'at0' \(SequenceAt\): its position \(input 1\) must be "
                                               r"known while importing"):
        import_onnx(model)
