"""`rlxir import` answers hostile ONNX models (random ops, shapes and attributes) with a graph
or an explained error; the crashes the fuzzer found are kept as regression cases."""

from __future__ import annotations

import pytest

onnx = pytest.importorskip("onnx")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from rlxir.testing.fuzz import run_command  # noqa: E402
from rlxir.testing.fuzz_onnx import OPSET, onnx_models  # noqa: E402


def _import(tmp_path, data: bytes):
    path = tmp_path / "model.onnx"
    path.write_bytes(data)
    return run_command(["import", str(path)])


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(data=onnx_models())
def test_import_never_crashes(tmp_path_factory, data):
    result = _import(tmp_path_factory.mktemp("fuzz"), data)
    assert not result.crashed, result.output
    assert result.code in (0, 1), result.output


def _model(shape, nodes, initializers) -> bytes:
    graph = helper.make_graph(nodes, "regression", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)]).SerializeToString()


def _ints(name, values):
    import numpy as np

    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


def test_a_reshape_zero_past_the_input_rank_is_explained(tmp_path):
    data = _model(["N"], [helper.make_node("Reshape", ["x", "shape"], ["y"])], [_ints("shape", [2, 0])])
    result = _import(tmp_path, data)
    assert result.code == 1 and not result.crashed
    assert "the 0 at index 1 copies an input dim, but the input has rank 1" in result.output


def test_a_squeeze_axis_out_of_range_is_explained(tmp_path):
    data = _model([], [helper.make_node("Squeeze", ["x", "axes"], ["y"])], [_ints("axes", [0])])
    result = _import(tmp_path, data)
    assert result.code == 1 and not result.crashed
    assert "Squeeze of axis 0 of a rank-0 input" in result.output
