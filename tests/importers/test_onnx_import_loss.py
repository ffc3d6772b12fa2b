"""ONNX NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: every reduction, class
weights, an ignored index, scores of rank 2 to 4, imported and run against onnxruntime."""

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

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def loss_model(op: str, scores_shape, weighted: bool, log_prob: bool = False, **attributes):
    inputs = ["x", "t"] + (["w"] if weighted else [])
    outputs = ["loss"] + (["log_prob"] if log_prob else [])
    node = helper.make_node(op, inputs, outputs, **attributes)
    target_shape = [scores_shape[0], *scores_shape[2:]]
    declared = [("x", F, list(scores_shape)), ("t", I64, target_shape)] + ([("w", F, [scores_shape[1]])] if weighted
                                                                          else [])
    return make_model([node], declared, [(name, F, None) for name in outputs], opset=13)


def feeds_for(scores_shape, weighted: bool, ignore_index=None, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    classes = scores_shape[1]
    target = rng.integers(0, classes, [scores_shape[0], *scores_shape[2:]]).astype(np.int64)
    if ignore_index is not None:
        target.reshape(-1)[::3] = ignore_index
    feeds = {"x": rng.standard_normal(scores_shape).astype(np.float32), "t": target}
    if weighted:
        feeds["w"] = rng.uniform(0.2, 2.0, classes).astype(np.float32)
    return feeds


def check_loss(model, feeds, bindings=None):
    got, want = run_imported(model, feeds, bindings), expected_outputs(model, feeds, reference=False)
    for have, expected in zip(got, want):
        assert have.shape == expected.shape
        np.testing.assert_allclose(have, expected, rtol=1e-5, atol=1e-6)


SHAPES = [(3, 5), (2, 4, 3), (2, 3, 2, 2)]


@pytest.mark.parametrize("ignore_index", [None, 1, -1])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("op", ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"])
def test_losses_match_onnxruntime(op, shape, reduction, weighted, ignore_index):
    attributes = {"reduction": reduction} | ({} if ignore_index is None else {"ignore_index": ignore_index})
    model = loss_model(op, shape, weighted, **attributes)
    check_loss(model, feeds_for(shape, weighted, ignore_index), bindings={"B": shape[0]})


def test_softmax_cross_entropy_log_prob_output_is_a_stable_log_softmax():
    shape = (2, 4, 3)
    model = loss_model("SoftmaxCrossEntropyLoss", shape, weighted=True, log_prob=True, reduction="mean")
    feeds = feeds_for(shape, True)
    feeds["x"] = feeds["x"] * 200  # exp would overflow without the max shift
    check_loss(model, feeds, bindings={"B": 2})
    assert "log" in ops_of(import_onnx(model)) and "softmax" not in ops_of(import_onnx(model))


def test_loss_with_an_unknown_reduction_is_refused():
    model = loss_model("NegativeLogLikelihoodLoss", (3, 5), weighted=False, reduction="max")
    with pytest.raises(UnsupportedModel, match="NegativeLogLikelihoodLoss reduction 'max'"):
        import_onnx(model)
