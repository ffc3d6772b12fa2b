"""A model's static batch becomes the batch symbol when the model lets it vary, and stays
the fixed size (with a note saying why) when it does not."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from rlxir.importers.onnx import import_onnx  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402


def model_of(nodes, inputs, output, initializers=()):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(name, dtype, shape) for name, dtype, shape in inputs],
                              [helper.make_tensor_value_info(*output)], initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_batch_broadcast_against_a_fixed_dim_of_its_size_stays_static():
    model = model_of([helper.make_node("Add", ["x", "w"], ["y"])], [("x", TensorProto.FLOAT, [2, 2])],
                     ("y", TensorProto.FLOAT, [2, 2]), [numpy_helper.from_array(np.ones((2, 2), np.float32), "w")])
    imported = import_onnx(model)
    assert imported.graph.symbols == {}
    assert str(imported.graph.type(imported.outputs["y"])) == "f32[2, 2]"
    assert len(imported.notes) == 1 and "the batch stays static (2)" in imported.notes[0]
    assert "cannot broadcast" in imported.notes[0]
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    got = interpret(imported.graph, {imported.inputs["x"]: x}, dict(imported.params))
    np.testing.assert_array_equal(got[imported.outputs["y"]], x + 1)


def test_a_batch_read_as_data_through_shape_stays_the_symbol_counted_at_run_time():
    model = model_of([helper.make_node("Shape", ["x"], ["y"])], [("x", TensorProto.FLOAT, [3, 4])],
                     ("y", TensorProto.INT64, [2]))
    imported = import_onnx(model)
    assert imported.graph.symbols == {"B": 3} and imported.notes == ()
    for batch in (3, 5):
        x = np.zeros((batch, 4), np.float32)
        got = interpret(imported.graph, {imported.inputs["x"]: x}, dict(imported.params), {"B": batch})
        np.testing.assert_array_equal(got[imported.outputs["y"]], [batch, 4])


def test_a_batch_that_can_vary_is_the_symbol_with_no_note():
    model = model_of([helper.make_node("Relu", ["x"], ["y"])], [("x", TensorProto.FLOAT, [2, 4])],
                     ("y", TensorProto.FLOAT, [2, 4]))
    imported = import_onnx(model)
    assert imported.graph.symbols == {"B": 2} and imported.notes == ()


def test_an_asked_batch_size_is_never_dropped_for_a_static_one():
    model = model_of([helper.make_node("Add", ["x", "w"], ["y"])], [("x", TensorProto.FLOAT, [2, 2])],
                     ("y", TensorProto.FLOAT, [2, 2]), [numpy_helper.from_array(np.ones((2, 2), np.float32), "w")])
    with pytest.raises(Exception, match="cannot broadcast"):
        import_onnx(model, batch_size=4)


def test_the_import_command_prints_the_note(tmp_path):
    model = model_of([helper.make_node("Add", ["x", "w"], ["y"])], [("x", TensorProto.FLOAT, [2, 2])],
                     ("y", TensorProto.FLOAT, [2, 2]), [numpy_helper.from_array(np.ones((2, 2), np.float32), "w")])
    path = tmp_path / "fixed.onnx"
    onnx.save(model, str(path))
    done = subprocess.run([sys.executable, "-m", "rlxir", "import", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "note: the batch stays static (2)" in done.stderr
    assert "graph g {" in done.stdout


def shape_max_model(batch) -> "onnx.ModelProto":
    """y = x reshaped to [max(batch, 3) ... ]: Max of the batch read through Shape and 3."""
    nodes = [helper.make_node("Shape", ["x"], ["shape"], start=0, end=1),
             helper.make_node("Max", ["shape", "three"], ["rows"]),
             helper.make_node("Concat", ["rows", "minus_one"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    return model_of(nodes, [("x", TensorProto.FLOAT, [batch, 6])], ("y", TensorProto.FLOAT, None),
                    [numpy_helper.from_array(np.array([3], np.int64), "three"),
                     numpy_helper.from_array(np.array([-1], np.int64), "minus_one")])


def test_a_max_over_the_batch_symbol_is_refused_and_a_static_batch_falls_back():
    from rlxir.importers import UnsupportedModel

    with pytest.raises(UnsupportedModel, match="the max of B and 3 depends on the values of the symbols"):
        import_onnx(shape_max_model("N"))
    imported = import_onnx(shape_max_model(4))
    assert str(imported.graph.type(imported.outputs["y"])) == "f32[4, 6]"
    assert "the max of B and 3" in imported.notes[0]


def test_a_max_the_symbols_decide_is_evaluated():
    from rlxir.importers.onnx_ops import _static_maximum
    from rlxir.symbolic import Expr

    b = Expr.symbol("B")
    got = _static_maximum(np.array([b + 2, 1], dtype=object), np.array([b, 5], dtype=object))
    assert list(got) == [b + 2, 5]
