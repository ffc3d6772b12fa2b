"""Imported integer params carry the bound of their own values (`fill_limit`), so runs on
default fills (no --params) index the model's tables in range, however the ids reach their
gather."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from rlxir.importers.onnx import import_onnx  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402


def token_type_model() -> "onnx.ModelProto":
    """x [B, 6, 4] + table[expand(ids, [B, 6]) * one + zero]: the ids reach the gather
    through arithmetic on the batch."""
    ids = numpy_helper.from_array(np.array([[0, 1, 1, 0, 1, 0]], dtype=np.int64), "token_type_ids")
    table = numpy_helper.from_array(np.arange(8, dtype=np.float32).reshape(2, 4), "type_table")
    one = numpy_helper.from_array(np.array(1, dtype=np.int64), "one")
    zero = numpy_helper.from_array(np.array(0, dtype=np.int64), "zero")
    six = numpy_helper.from_array(np.array([6], dtype=np.int64), "six")
    nodes = [helper.make_node("Shape", ["x"], ["x_shape"], start=0, end=1),
             helper.make_node("Concat", ["x_shape", "six"], ["ids_shape"], axis=0),
             helper.make_node("Expand", ["token_type_ids", "ids_shape"], ["batch_ids"]),
             helper.make_node("Mul", ["batch_ids", "one"], ["scaled"]),
             helper.make_node("Add", ["scaled", "zero"], ["shifted"]),
             helper.make_node("Gather", ["type_table", "shifted"], ["types"]),
             helper.make_node("Add", ["x", "types"], ["y"])]
    graph = helper.make_graph(nodes, "types", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 6, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", 6, 4])],
                              initializer=[ids, table, one, zero, six])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_an_integer_param_records_the_bound_of_its_values():
    imported = import_onnx(token_type_model())
    assert imported.graph.attrs("token_type_ids") == {"fill_limit": 2}
    float_params = [name for name in imported.graph.params() if imported.graph.type(name).dtype.is_float]
    assert all(imported.graph.attrs(name) == {} for name in float_params)


def test_a_run_on_default_fills_stays_inside_the_table(tmp_path):
    imported = import_onnx(token_type_model())
    got = interpret(imported.graph, bindings={"B": 3})  # every input and param filled by default
    assert got[imported.outputs["y"]].shape == (3, 6, 4)
    path = tmp_path / "types.onnx"
    onnx.save(token_type_model(), str(path))
    text = tmp_path / "types.rlx"
    done = subprocess.run([sys.executable, "-m", "rlxir", "import", str(path), "-o", str(text)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "fill_limit = 2" in text.read_text()
    run = subprocess.run([sys.executable, "-m", "rlxir", "run", str(text), "--target", "cpu", "-D", "B=2"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "matched" in run.stdout


def test_negative_values_record_no_bound():
    from rlxir.importers.builder import value_bound
    from rlxir.dtypes import DType

    assert value_bound(np.array([-1, 3]), DType.i64) == {}
    assert value_bound(np.array([0, 3]), DType.i32) == {"fill_limit": 4}
    assert value_bound(np.array([0.5]), DType.f32) == {}
