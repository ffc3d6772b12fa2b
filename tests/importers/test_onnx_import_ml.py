"""ONNX ai.onnx.ml Binarizer and ArrayFeatureExtractor, against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import helper, numpy_helper  # noqa: E402
from test_onnx_import_math import ELEMENT, expected_outputs, run_imported  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402


def ml_model(node, inputs: dict, initializers=()):
    """One node over `inputs`; its output has the first input's element type."""
    element = ELEMENT[next(iter(inputs.values())).dtype]
    graph = helper.make_graph([node], "t", [helper.make_tensor_value_info(name, ELEMENT[array.dtype], list(array.shape))
                                            for name, array in inputs.items()],
                              [helper.make_tensor_value_info(node.output[0], element, None)],
                              [numpy_helper.from_array(array, name) for name, array in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("ai.onnx.ml", 3), helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def same_as_onnxruntime(model, feeds, reference=False):
    got = run_imported(model, feeds, {"B": next(iter(feeds.values())).shape[0]})
    want = expected_outputs(model, feeds, reference)
    for have, expected in zip(got, want):
        assert have.shape == expected.shape and have.dtype == expected.dtype
        np.testing.assert_array_equal(have, expected)


@pytest.mark.parametrize("dtype, threshold", [(np.float32, 0.25), (np.float64, -1.0), (np.int32, 1.5),
                                              (np.int64, -2.0)])
def test_binarizer(dtype, threshold):
    x = (np.random.default_rng(0).standard_normal((3, 5)) * 3).astype(dtype)
    node = helper.make_node("Binarizer", ["x"], ["y"], domain="ai.onnx.ml", threshold=threshold)
    # onnxruntime's Binarizer takes f32 only; the reference evaluator every type
    same_as_onnxruntime(ml_model(node, {"x": x}), {"x": x}, reference=dtype is not np.float32)


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4)])
def test_array_feature_extractor(shape):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    node = helper.make_node("ArrayFeatureExtractor", ["x", "i"], ["y"], domain="ai.onnx.ml")
    model = ml_model(node, {"x": x}, [("i", np.array([3, 0, 3], np.int64))])
    same_as_onnxruntime(model, {"x": x})


def test_binarizer_of_bools_is_refused():
    node = helper.make_node("Binarizer", ["x"], ["y"], domain="ai.onnx.ml")
    with pytest.raises(UnsupportedModel, match="Binarizer of a bool tensor"):
        import_onnx(ml_model(node, {"x": np.zeros((2, 2), bool)}))
