"""ONNX TfIdfVectorizer over integer tokens: every mode, skips, gram lengths, weights,
imported as comparisons and sums and run against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import_math import expected_outputs, run_imported  # noqa: E402
from test_onnx_import_ops import make_model  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402

POOL = {"pool_int64s": [2, 3, 5, 4, 5, 6, 7, 8, 6, 7], "ngram_counts": [0, 4], "ngram_indexes": [0, 1, 2, 3, 4, 5, 6]}
TOKENS = np.array([[1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8], [5, 6, 7, 8, 6, 7, 2, 3, 5, 4, 7, 8]], np.int32)


def tfidf_model(tokens: np.ndarray, **attributes):
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], **(POOL | attributes))
    element = TensorProto.INT32 if tokens.dtype == np.int32 else TensorProto.INT64
    return make_model([node], [("x", element, list(tokens.shape))], [("y", TensorProto.FLOAT, None)], opset=9)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("mode, weighted", [("TF", False), ("IDF", False), ("IDF", True), ("TFIDF", True)])
@pytest.mark.parametrize("low, high, skips", [(1, 1, 0), (2, 2, 0), (1, 2, 5), (2, 2, 3), (1, 2, 20)])
def test_tfidf_matches_onnxruntime(low, high, skips, mode, weighted, dtype):
    attributes = {"mode": mode, "min_gram_length": low, "max_gram_length": high, "max_skip_count": skips}
    if weighted:
        attributes["weights"] = [0.5, 1.0, 2.0, 3.0, 0.25, 1.5, 4.0]
    tokens = TOKENS.astype(dtype)
    model = tfidf_model(tokens, **attributes)
    got, want = run_imported(model, {"x": tokens}, {"B": 2}), expected_outputs(model, {"x": tokens}, False)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)


def test_tfidf_of_an_unknown_mode_is_refused():
    with pytest.raises(UnsupportedModel, match="TfIdfVectorizer mode 'BM25'"):
        import_onnx(tfidf_model(TOKENS, mode="BM25", min_gram_length=1, max_gram_length=1, max_skip_count=0))


def test_tfidf_with_too_few_output_columns_is_refused():
    model = tfidf_model(TOKENS, mode="TF", min_gram_length=1, max_gram_length=2, max_skip_count=0,
                        ngram_indexes=[0, 1, 2])
    with pytest.raises(UnsupportedModel, match="TfIdfVectorizer with fewer ngram_indexes than pool n-grams"):
        import_onnx(model)
