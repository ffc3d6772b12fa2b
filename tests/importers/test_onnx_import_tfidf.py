"""TfIdfVectorizer over integer tokens (onnx_tfidf), against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

from onnx_models import run_onnxruntime  # noqa: E402
from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402

def model_of(x_type, x_shape, out_shape, **attrs):
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], **attrs)
    graph = helper.make_graph([node], "tfidf", [helper.make_tensor_value_info("x", x_type, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)])
    model.ir_version = 8
    return model


def check(model, x):
    imported = import_onnx(model)
    want = run_onnxruntime(model, {"x": x})[0]
    got = interpret(imported.graph, {imported.inputs["x"]: x}, dict(imported.params))[imported.outputs["y"]]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got.dtype == np.float32


def tokens(*shape, seed=0):
    return np.random.default_rng(seed).integers(1, 9, shape)


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
@pytest.mark.parametrize("low, high, skip", [(1, 1, 0), (2, 2, 0), (1, 2, 3), (2, 2, 5)])
def test_counts_over_sizes_and_skips(mode, low, high, skip):
    weights = [0.5, 1.0, 2.0, 0.25, 3.0, 1.5, 0.75, 1.25]
    model = model_of(TensorProto.INT64, [3, 12], [3, 8], mode=mode, min_gram_length=low, max_gram_length=high,
                     max_skip_count=skip, ngram_counts=[0, 4], pool_int64s=[2, 3, 5, 4, 5, 6, 7, 8, 6, 7, 2, 2],
                     ngram_indexes=[7, 6, 5, 4, 3, 2, 1, 0], weights=weights)
    check(model, tokens(3, 12))


def test_one_row_of_i32_tokens_and_shared_columns():
    model = model_of(TensorProto.INT32, [10], [3], mode="TF", min_gram_length=1, max_gram_length=2,
                     max_skip_count=1, ngram_counts=[0, 2], pool_int64s=[2, 3, 2, 3, 3, 3],
                     ngram_indexes=[0, 1, 2, 2])
    check(model, tokens(10, seed=1).astype(np.int32))


def test_a_pool_of_strings_is_refused():
    model = model_of(TensorProto.INT64, [4], [2], mode="TF", min_gram_length=1, max_gram_length=1,
                     max_skip_count=0, ngram_counts=[0], pool_strings=["a", "b"], ngram_indexes=[0, 1])
    with pytest.raises(UnsupportedModel, match=r"TfIdfVectorizer over a pool of strings: the IR has no string dtype"):
        import_onnx(model)
