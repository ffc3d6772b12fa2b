"""The ai.onnx.ml preprocessing and linear-model ops (Scaler, Normalizer, Imputer,
LinearRegressor, LinearClassifier, OneHotEncoder, FeatureVectorizer, LabelEncoder of
numbers) against ONNX's reference evaluator, and their refusals with a reason."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402

F, D, I64 = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64


def model_of(op_type: str, inputs, outputs, **attributes):
    """`inputs` and `outputs`: (name, elem type, shape) triples."""
    node = helper.make_node(op_type, [name for name, *_ in inputs], [name for name, *_ in outputs],
                            domain="ai.onnx.ml", **attributes)
    graph = helper.make_graph([node], "ml", [helper.make_tensor_value_info(*value) for value in inputs],
                              [helper.make_tensor_value_info(*value) for value in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 3)])
    model.ir_version = 10
    return model


def compare(model, feeds: dict, rtol=1e-5):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wants = ReferenceEvaluator(model).run(None, feeds)
    imported = import_onnx(model)
    assert imported.outputs == {output.name: output.name for output in model.graph.output}
    ran = interpret(imported.graph, {imported.inputs[name]: value for name, value in feeds.items()})
    for output, want in zip(model.graph.output, wants):
        got = ran[imported.outputs[output.name]]
        assert got.dtype == helper.tensor_dtype_to_np_dtype(output.type.tensor_type.elem_type), output.name
        np.testing.assert_allclose(got, np.asarray(want).astype(got.dtype), rtol=rtol, atol=1e-6, err_msg=output.name)
    return ran


def matrix(seed=0, rows=6, features=4, dtype=np.float32):
    return (np.random.default_rng(seed).standard_normal((rows, features)) * 2).astype(dtype)


@pytest.mark.parametrize(("offset", "scale"), [([0.5], [2.0]), ([0.1, -0.2, 0.3, 1.0], [1.0, 2.0, -1.0, 0.5])])
def test_scaler(offset, scale):
    model = model_of("Scaler", [("X", F, [6, 4])], [("Y", F, [6, 4])], offset=offset, scale=scale)
    compare(model, {"X": matrix()})


@pytest.mark.parametrize("op_type, attributes", [("Scaler", {"offset": [0.5], "scale": [2.0]}),
                                                 ("Normalizer", {"norm": "L2"})])
def test_a_double_input_gives_the_float_output_onnx_declares(op_type, attributes):
    model = model_of(op_type, [("X", D, [6, 4])], [("Y", F, [6, 4])], **attributes)
    compare(model, {"X": matrix(13, dtype=np.float64)})


@pytest.mark.parametrize("norm", ["MAX", "L1", "L2"])
def test_normalizer(norm):
    x = matrix(1)
    x[2] = 0.0  # a zero row divides by 1e-30
    compare(model_of("Normalizer", [("X", F, [6, 4])], [("Y", F, [6, 4])], norm=norm), {"X": x})


def test_imputer_of_nans_and_of_a_value():
    x = matrix(2)
    x[[0, 3], [1, 2]] = np.nan
    compare(model_of("Imputer", [("X", F, [6, 4])], [("Y", F, [6, 4])], imputed_value_floats=[1.0, 2.0, 3.0, 4.0],
                     replaced_value_float=float("nan")), {"X": x})
    counts = np.array([[1, 0, 3], [0, 0, 2]], np.int64)
    compare(model_of("Imputer", [("X", I64, [2, 3])], [("Y", I64, [2, 3])], imputed_value_int64s=[7],
                     replaced_value_int64=0), {"X": counts})


@pytest.mark.parametrize("targets", [1, 3])
def test_linear_regressor(targets):
    rng = np.random.default_rng(targets)
    model = model_of("LinearRegressor", [("X", F, [6, 4])], [("Y", F, [6, targets])],
                     coefficients=rng.standard_normal(4 * targets).tolist(), intercepts=rng.standard_normal(targets)
                     .tolist(), targets=targets)
    compare(model, {"X": matrix(3)})


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"])
def test_linear_classifier_of_three_classes(post):
    rng = np.random.default_rng(5)
    model = model_of("LinearClassifier", [("X", F, [6, 4])], [("label", I64, [6]), ("scores", F, [6, 3])],
                     coefficients=rng.standard_normal(12).tolist(), intercepts=[0.1, -0.2, 0.3],
                     classlabels_ints=[3, 5, 8], post_transform=post)
    compare(model, {"X": matrix(4)})


def test_linear_classifier_without_labels_answers_positions():
    rng = np.random.default_rng(14)
    model = model_of("LinearClassifier", [("X", F, [6, 4])], [("label", I64, [6]), ("scores", F, [6, 3])],
                     coefficients=rng.standard_normal(12).tolist(), intercepts=[0.0, 0.5, -0.5])
    compare(model, {"X": matrix(14)})


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC"])
def test_linear_classifier_binary_from_one_column(post):
    model = model_of("LinearClassifier", [("X", F, [6, 4])], [("label", I64, [6]), ("scores", F, [6, 2])],
                     coefficients=[0.5, -1.0, 0.25, 2.0], intercepts=[0.1], classlabels_ints=[0, 1],
                     post_transform=post)
    compare(model, {"X": matrix(6)})


def test_linear_classifier_in_double_precision():
    model = model_of("LinearClassifier", [("X", D, [6, 4])], [("label", I64, [6]), ("scores", F, [6, 2])],
                     coefficients=np.random.default_rng(7).standard_normal(8).tolist(), intercepts=[0.5, -0.5],
                     classlabels_ints=[1, 2])
    compare(model, {"X": matrix(7, dtype=np.float64)})


def test_linear_classifier_without_intercepts():
    # ONNX's reference adds NaN for absent intercepts; the specification adds nothing.
    coefficients = np.random.default_rng(9).standard_normal(8)
    model = model_of("LinearClassifier", [("X", F, [6, 4])], [("label", I64, [6]), ("scores", F, [6, 2])],
                     coefficients=coefficients.tolist(), classlabels_ints=[1, 2])
    imported = import_onnx(model)
    x = matrix(9)
    ran = interpret(imported.graph, {imported.inputs["X"]: x})
    scores = x.astype(np.float64) @ coefficients.reshape(2, 4).T
    np.testing.assert_allclose(ran[imported.outputs["scores"]], scores, rtol=1e-5)
    np.testing.assert_array_equal(ran[imported.outputs["label"]], np.array([1, 2])[scores.argmax(1)])


def test_one_hot_encoder():
    x = np.array([[3, 1], [7, 3], [9, 1]], np.int64)  # 9 is no category: a row of zeros
    model = model_of("OneHotEncoder", [("X", I64, [3, 2])], [("Y", F, [3, 2, 3])], cats_int64s=[1, 3, 7])
    ran = compare(model, {"X": x})
    assert not next(iter(ran.values()))[2, 0].any()


def test_feature_vectorizer_cuts_and_pads():
    model = model_of("FeatureVectorizer", [("A", F, [3, 4]), ("B", F, [3]), ("C", F, [3, 1])], [("Y", F, [3, 6])],
                     inputdimensions=[2, 1, 3])
    rng = np.random.default_rng(8)
    compare(model, {"A": rng.standard_normal((3, 4)).astype(np.float32),
                    "B": rng.standard_normal(3).astype(np.float32),
                    "C": rng.standard_normal((3, 1)).astype(np.float32)})


def test_label_encoder_of_numbers():
    ints = model_of("LabelEncoder", [("X", I64, [5])], [("Y", I64, [5])], keys_int64s=[1, 2, 3],
                    values_int64s=[10, 20, 30], default_int64=-7)
    compare(ints, {"X": np.array([3, 1, 4, 2, 0], np.int64)})
    floats = model_of("LabelEncoder", [("X", F, [4])], [("Y", I64, [4])], keys_floats=[0.5, 1.5],
                      values_int64s=[1, 2])
    compare(floats, {"X": np.array([1.5, 0.5, 2.5, np.nan], np.float32)})


def test_label_encoder_of_tensors():
    node = helper.make_node("LabelEncoder", ["X"], ["Y"], domain="ai.onnx.ml",
                            keys_tensor=numpy_helper.from_array(np.array([4, 5], np.int64), "keys"),
                            values_tensor=numpy_helper.from_array(np.array([0.25, 0.75], np.float32), "values"),
                            default_tensor=numpy_helper.from_array(np.array([9.0], np.float32), "default"))
    graph = helper.make_graph([node], "ml", [helper.make_tensor_value_info("X", I64, [3])],
                              [helper.make_tensor_value_info("Y", F, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 4)])
    model.ir_version = 10
    compare(model, {"X": np.array([5, 6, 4], np.int64)})


@pytest.mark.parametrize(("op_type", "attributes", "reason"), [
    ("Normalizer", {"norm": "L3"}, "norm 'L3'"),
    ("LinearRegressor", {"coefficients": [1.0, 2.0, 3.0]}, "3 coefficients for 4 features"),
    ("LinearRegressor", {"coefficients": [1.0] * 4, "post_transform": "CUBE"}, "post_transform 'CUBE'"),
    ("Scaler", {"offset": [1.0, 2.0], "scale": [1.0]}, "2 offsets for 4 features"),
    ("OneHotEncoder", {"cats_strings": ["a"]}, "OneHotEncoder of strings"),
    ("LabelEncoder", {"keys_strings": ["a"], "values_int64s": [1]}, "LabelEncoder of strings"),
    ("Imputer", {}, "without imputed values"),
])
def test_refused_with_a_reason(op_type, attributes, reason):
    with pytest.raises(UnsupportedModel, match=reason):
        import_onnx(model_of(op_type, [("X", F, [6, 4])], [("Y", F, None)], **attributes))


@pytest.mark.parametrize("kernel", ["LINEAR", "POLY", "RBF", "SIGMOID"])
@pytest.mark.parametrize("one_class", [0, 1])
def test_svm_regressor(kernel, one_class):
    rng = np.random.default_rng(11)
    model = model_of("SVMRegressor", [("X", F, [6, 4])], [("Y", F, [6, 1])], kernel_type=kernel,
                     kernel_params=[0.3, 0.5, 3.0], n_supports=5, support_vectors=rng.standard_normal(20).tolist(),
                     coefficients=rng.standard_normal(5).tolist(), rho=[0.25], one_class=one_class)
    compare(model, {"X": matrix(11)}, rtol=1e-4)


def test_svm_regressor_without_support_vectors():
    model = model_of("SVMRegressor", [("X", F, [6, 4])], [("Y", F, [6, 1])], coefficients=[0.5, -1.0, 2.0, 0.25],
                     rho=[-0.5])
    compare(model, {"X": matrix(12)})


def test_map_ops_are_refused_with_a_reason():
    node = helper.make_node("ZipMap", ["X"], ["Y"], domain="ai.onnx.ml", classlabels_int64s=[0, 1])
    maps = helper.make_sequence_type_proto(helper.make_map_type_proto(I64, helper.make_tensor_type_proto(F, [])))
    graph = helper.make_graph([node], "ml", [helper.make_tensor_value_info("X", F, [3, 2])],
                              [helper.make_value_info("Y", maps)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 3)])
    with pytest.raises(UnsupportedModel, match="ZipMap cannot be imported: it works on maps"):
        import_onnx(model)


def svm_classifier_attributes(classes: int, per_class: int, kernel: str, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    vectors = classes * per_class
    return dict(classlabels_ints=list(range(5, 5 + classes)), kernel_type=kernel, kernel_params=[0.2, 0.1, 2.0],
                vectors_per_class=[per_class] * classes, support_vectors=rng.standard_normal(vectors * 4).tolist(),
                coefficients=rng.standard_normal((classes - 1) * vectors).tolist(),
                rho=rng.standard_normal(classes * (classes - 1) // 2).tolist())


@pytest.mark.parametrize(("classes", "kernel"), [(3, "RBF"), (4, "LINEAR"), (3, "POLY"), (2, "SIGMOID"), (2, "RBF")])
def test_svm_classifier_votes(classes, kernel):
    attributes = svm_classifier_attributes(classes, 3, kernel, classes)
    width = 2 if classes == 2 else classes * (classes - 1) // 2
    model = model_of("SVMClassifier", [("X", F, [6, 4])], [("label", I64, [6]), ("scores", F, [6, width])],
                     **attributes)
    compare(model, {"X": matrix(15)}, rtol=1e-4)


def test_svm_classifier_without_support_vectors():
    model = model_of("SVMClassifier", [("X", F, [6, 4])], [("label", I64, [6]), ("scores", F, [6, 3])],
                     classlabels_ints=[1, 2, 3], coefficients=np.random.default_rng(16).standard_normal(12).tolist(),
                     rho=[0.25])
    compare(model, {"X": matrix(16)})


@pytest.mark.parametrize("classes", [2, 3, 4])
def test_svm_classifier_probabilities_against_onnxruntime(classes):
    """The pairwise probabilities coupled by libsvm's iterative solve, row by row, as
    onnxruntime runs it (ONNX's reference builds the solve's matrix otherwise: not used)."""
    pytest.importorskip("onnxruntime")
    from onnx_models import run_onnxruntime

    rng = np.random.default_rng(20 + classes)
    attributes = svm_classifier_attributes(classes, 3, "RBF", classes + 20)
    pairs = classes * (classes - 1) // 2
    attributes.update(prob_a=(-rng.uniform(0.5, 2.0, pairs)).tolist(), prob_b=rng.normal(0, 0.3, pairs).tolist())
    model = model_of("SVMClassifier", [("X", F, [8, 4])], [("label", I64, [8]), ("scores", F, [8, classes])],
                     **attributes)
    x = (matrix(21, rows=8) * 0.7).astype(np.float32)
    labels, probabilities = run_onnxruntime(model, {"X": x})
    imported = import_onnx(model)
    ran = interpret(imported.graph, {imported.inputs["X"]: x})
    np.testing.assert_array_equal(ran[imported.outputs["label"]], labels)
    np.testing.assert_allclose(ran[imported.outputs["scores"]], probabilities, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(probabilities.sum(1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("post", ["LOGISTIC", "SOFTMAX", "PROBIT"])
def test_a_binary_svm_classifier_transforms_its_score_pair(post):
    attributes = svm_classifier_attributes(2, 3, "RBF", 17)
    attributes["post_transform"] = post
    model = model_of("SVMClassifier", [("X", F, [6, 4])], [("label", I64, [6]), ("scores", F, None)], **attributes)
    compare(model, {"X": matrix(17)}, rtol=1e-4)
