"""Forms that only old opsets have, as the onnx package's converted PyTorch models use them."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from rlxir.importers.onnx import import_onnx  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402


def prelu_model(opset: int, slope: np.ndarray):
    graph = helper.make_graph([helper.make_node("PRelu", ["x", "slope"], ["y"])], "prelu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4])],
                              initializer=[numpy_helper.from_array(slope, "slope")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_a_per_channel_slope_before_opset_7_applies_along_axis_1():
    slope = np.array([0.1, 0.2, 0.3], np.float32)
    imported = import_onnx(prelu_model(6, slope))
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4)
    got = interpret(imported.graph, {imported.inputs["x"]: x}, dict(imported.params))[imported.outputs["y"]]
    np.testing.assert_allclose(got, np.where(x >= 0, x, x * slope[None, :, None]), rtol=1e-6)


def test_from_opset_7_the_slope_broadcasts_as_numpy_does():
    from rlxir.errors import RlxError

    with pytest.raises(RlxError, match="cannot broadcast"):
        import_onnx(prelu_model(9, np.array([0.1, 0.2, 0.3], np.float32)))
