"""Malformed ONNX nodes (a required attribute missing, an input missing, attributes that
contradict each other or the input, an attribute of another type than ONNX declares) are
refused with a located error, never an internal one: the node's required attributes, its
attributes' types and its input count are checked against its ONNX schema before a
converter reads it, and an
exception a converter did not expect is put to ONNX's strict shape inference, whose finding
is the error."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from rlxir.errors import RlxError  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402

F = TensorProto.FLOAT


def model_of(node, x_shape=(1, 3, 8, 8), initializers=(), opset=18):
    graph = helper.make_graph([node], "bad", [helper.make_tensor_value_info("x", F, list(x_shape))],
                              [helper.make_tensor_value_info("y", F, None)],
                              initializer=[numpy_helper.from_array(array, name) for name, array in initializers])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


MALFORMED = {
    "a required attribute missing": (model_of(helper.make_node("Cast", ["x"], ["y"], name="n")),
                                     r"ONNX node 'n' \(Cast\): the node lacks its required attribute to"),
    "an input missing": (model_of(helper.make_node("BitShift", ["x"], ["y"], name="n", direction="LEFT")),
                         r"ONNX node 'n' \(BitShift\): the node has 1 inputs"),
    "an empty name for a required input": (model_of(helper.make_node("Add", ["x", ""], ["y"], name="n")),
                                           r"ONNX node 'n' \(Add\): its input 1 \(B\) is empty"),
    "a kernel of the wrong rank": (model_of(helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2, 2],
                                                             pads=[0, 0, 0, 0])),
                                   r"not a valid ONNX model|kernel_shape"),
    "an Lp pool of order 0": (model_of(helper.make_node("LpPool", ["x"], ["y"], name="n", kernel_shape=[2, 2], p=0)),
                              r"ONNX node 'n' \(LpPool\): an Lp pool of order p = 0.0"),
    "a concat axis past the rank": (model_of(helper.make_node("Concat", ["x", "w"], ["y"], name="n", axis=9),
                                             initializers=[("w", np.ones((1, 3, 8, 8), np.float32))]),
                                    r"not a valid ONNX model|axis 9 is out of range"),
    "an attribute of the wrong type": (model_of(helper.make_node("Transpose", ["x"], ["y"], name="n", perm="0123")),
                                       r"ONNX node 'n' \(Transpose\): its attribute perm is of type STRING"),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_node_is_a_located_refusal(case):
    model, message = MALFORMED[case]
    with pytest.raises(RlxError, match=message):
        import_onnx(model)


def test_the_import_command_exits_1_on_a_malformed_node(tmp_path):
    path = tmp_path / "bad.onnx"
    onnx.save(MALFORMED["a required attribute missing"][0], str(path))
    done = subprocess.run([sys.executable, "-m", "rlxir", "import", str(path)], capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    assert "lacks its required attribute to" in done.stderr and "Traceback" not in done.stderr
