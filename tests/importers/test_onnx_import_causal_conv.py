"""ONNX CausalConvWithState (past state, bias, fused SiLU, f16, k = 1), against
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

F = TensorProto.FLOAT


def _model(kernel, activation, with_bias, with_state, elem=F):
    inputs = ["x", "w", "b" if with_bias else "", "state" if with_state else ""]
    node = helper.make_node("CausalConvWithState", inputs, ["y", "present"], activation=activation)
    graph_inputs = [("x", elem, ["N", 3, 6])] + ([("state", elem, ["N", 3, kernel - 1])] if with_state else [])
    dtype = np.float16 if elem == TensorProto.FLOAT16 else np.float32
    initializers = [("w", weights(3, 1, kernel).astype(dtype))] + \
        ([("b", weights(3, seed=1).astype(dtype))] if with_bias else [])
    model = make_model([node], graph_inputs, [("y", elem, None), ("present", elem, None)], initializers, opset=27)
    model.ir_version = 10
    return model


@pytest.mark.parametrize("activation", ["none", "silu", "swish"])
@pytest.mark.parametrize("with_bias, with_state", [(False, False), (True, False), (True, True)],
                         ids=["plain", "bias", "bias_state"])
def test_causal_conv_with_state(activation, with_bias, with_state):
    imported = check_everywhere(_model(4, activation, with_bias, with_state), {"B": 2})
    assert "conv2d" in ops_of(imported)


def test_causal_conv_with_state_in_f16_computes_in_f32():
    imported = check_everywhere(_model(3, "silu", True, True, TensorProto.FLOAT16), {"B": 2}, rtol=1e-3, atol=1e-3)
    assert "cast" in ops_of(imported)


def test_causal_conv_with_a_one_tap_kernel_has_an_empty_state():
    check_everywhere(_model(1, "none", False, False), {"B": 2})


def test_causal_conv_with_an_unknown_activation_is_a_located_error():
    node = helper.make_node("CausalConvWithState", ["x", "w"], ["y"], activation="gelu", name="cc")
    model = make_model([node], [("x", F, [1, 2, 5])], [("y", F, None)], [("w", weights(2, 1, 3))], opset=27)
    model.ir_version = 10
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'cc' \(CausalConvWithState\).*activation 'gelu'"):
        import_onnx(model)
