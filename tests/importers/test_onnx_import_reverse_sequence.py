"""ONNX ReverseSequence against onnxruntime: lengths known while importing and computed at
run time, either axis order, inputs of rank 2 and 3."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import_ops import check, make_model, ops_of  # noqa: E402

from rlxir.importers.onnx import import_onnx  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64


@pytest.mark.parametrize("time_axis", [0, 1])
def test_lengths_known_while_importing(time_axis):
    shape = [5, 3, 2] if time_axis == 0 else [3, 5, 2]
    node = helper.make_node("ReverseSequence", ["x", "lens"], ["y"], time_axis=time_axis, batch_axis=1 - time_axis)
    model = make_model([node], [("x", F, shape)], [("y", F, shape)], [("lens", np.array([5, 0, 3], np.int64))])
    imported = check(model)
    assert ops_of(imported)[-1] == "gather_elements"


@pytest.mark.parametrize("time_axis", [0, 1])
def test_lengths_computed_at_run_time(time_axis):
    shape = [4, 3] if time_axis == 0 else [3, 4]
    node = helper.make_node("ReverseSequence", ["x", "lens"], ["y"], time_axis=time_axis, batch_axis=1 - time_axis)
    model = make_model([node], [("x", F, shape), ("lens", I64, [3])], [("y", F, shape)])
    imported = import_onnx(model, batch_size=shape[0])
    from rlxir.interpreter import interpret

    x = np.arange(12, dtype=np.float32).reshape(shape)
    lens = np.array([1, 4, 2], np.int64)
    got = interpret(imported.graph, {imported.inputs["x"]: x, imported.inputs["lens"]: lens})
    want = x.copy()
    for b, length in enumerate(lens):
        if time_axis == 0:
            want[:length, b] = x[:length, b][::-1]
        else:
            want[b, :length] = x[b, :length][::-1]
    np.testing.assert_array_equal(got[imported.outputs["y"]], want)
