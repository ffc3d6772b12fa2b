"""ONNX ai.onnx.ml TreeEnsemble against ONNX's reference evaluator: random forests with
every branch mode (set membership included), NaN features sent either way, every
aggregate, several targets, f32 and f64, a tree that is a single leaf, a symbolic batch;
and the refusals, each with its reason."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402

GRID = np.array([-1.5, 0.0, 0.25, 1.2, 2.0, 3.7], np.float64)
"""Feature values and splits are drawn from here, so equality tests and sets hit."""


def random_forest(seed: int, trees: int, features: int, targets: int, modes: tuple[int, ...], depth: int) -> dict:
    """The attributes of a random forest of `trees` trees up to `depth` levels."""
    rng = np.random.default_rng(seed)
    nodes: dict[str, list] = {key: [] for key in ("featureids", "modes", "splits", "truenodeids", "falsenodeids",
                                                  "trueleafs", "falseleafs", "tracks")}
    members: list[float] = []
    weights: list[float] = []
    leaf_targets: list[int] = []

    def grow(level: int) -> tuple[int, int]:
        if level == depth or (level > 0 and rng.random() < 0.25):
            weights.append(float(np.round(rng.normal() * 4, 2)))
            leaf_targets.append(int(rng.integers(targets)))
            return len(weights) - 1, 1
        index = len(nodes["modes"])
        mode = int(rng.choice(modes))
        for key, value in (("featureids", int(rng.integers(features))), ("modes", mode),
                           ("splits", float(rng.choice(GRID))), ("tracks", int(rng.integers(2))),
                           ("truenodeids", 0), ("falsenodeids", 0), ("trueleafs", 0), ("falseleafs", 0)):
            nodes[key].append(value)
        if mode == 6:
            # Nonzero members: ONNX's reference evaluator ends a set at a member equal to 0
            # (tested against the specification below).
            members.extend(rng.choice(GRID[GRID != 0], size=int(rng.integers(1, 4)), replace=False).tolist())
            members.append(np.nan)
        for side in ("true", "false"):
            child, is_leaf = grow(level + 1)
            nodes[f"{side}nodeids"][index], nodes[f"{side}leafs"][index] = child, is_leaf
        return index, 0

    roots = [grow(0)[0] for _ in range(trees)]
    attributes = {
        "nodes_featureids": nodes["featureids"], "nodes_truenodeids": nodes["truenodeids"],
        "nodes_falsenodeids": nodes["falsenodeids"], "nodes_trueleafs": nodes["trueleafs"],
        "nodes_falseleafs": nodes["falseleafs"], "nodes_missing_value_tracks_true": nodes["tracks"],
        "leaf_targetids": leaf_targets, "tree_roots": roots, "n_targets": targets,
        "nodes_modes": numpy_helper.from_array(np.array(nodes["modes"], np.uint8), "nodes_modes"),
        "nodes_splits": numpy_helper.from_array(np.array(nodes["splits"], np.float32), "nodes_splits"),
        "leaf_weights": numpy_helper.from_array(np.array(weights, np.float32), "leaf_weights"),
    }
    if members:
        attributes["membership_values"] = numpy_helper.from_array(np.array(members, np.float32), "membership_values")
    return attributes


def model_of(attributes: dict, elem=TensorProto.FLOAT, rows=9, features=3):
    node = helper.make_node("TreeEnsemble", ["X"], ["Y"], domain="ai.onnx.ml", **attributes)
    graph = helper.make_graph([node], "forest", [helper.make_tensor_value_info("X", elem, [rows, features])],
                              [helper.make_tensor_value_info("Y", elem, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 5)])
    model.ir_version = 10
    return model


def features_of(seed: int, rows: int, features: int, dtype) -> np.ndarray:
    rng = np.random.default_rng(seed + 1000)
    x = rng.choice(GRID, size=(rows, features)).astype(dtype)
    x[rng.random((rows, features)) < 0.15] = np.nan
    return x


def compare(model, x: np.ndarray, bindings=None, rtol=1e-6):
    want = ReferenceEvaluator(model).run(None, {"X": x})[0]
    imported = import_onnx(model)
    assert imported.outputs == {"Y": "Y"}  # the output keeps the model's name
    got = interpret(imported.graph, {imported.inputs["X"]: x}, bindings=bindings)[imported.outputs["Y"]]
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)
    return imported, got


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("aggregate", [0, 1, 2, 3])
def test_random_forests_every_mode_and_aggregate(seed, aggregate):
    attributes = random_forest(seed, trees=3, features=3, targets=2, modes=(0, 1, 2, 3, 4, 5, 6), depth=3)
    attributes["aggregate_function"] = aggregate
    compare(model_of(attributes), features_of(seed, 9, 3, np.float32))


@pytest.mark.parametrize("seed", range(3))
def test_double_precision_forests(seed):
    attributes = random_forest(seed + 10, trees=2, features=3, targets=3, modes=(0, 3, 4, 6), depth=4)
    compare(model_of(attributes, TensorProto.DOUBLE), features_of(seed, 9, 3, np.float64))


def test_a_float_split_is_compared_with_a_float_feature_in_double_precision():
    # 1.2 as a double split is below 1.2 as a float: the float feature is not <= it.
    attributes = {"nodes_featureids": [0], "nodes_truenodeids": [0], "nodes_falsenodeids": [1],
                  "nodes_trueleafs": [1], "nodes_falseleafs": [1], "leaf_targetids": [0, 0], "tree_roots": [0],
                  "n_targets": 1, "nodes_modes": numpy_helper.from_array(np.array([0], np.uint8), "nodes_modes"),
                  "nodes_splits": numpy_helper.from_array(np.array([1.2], np.float64), "nodes_splits"),
                  "leaf_weights": numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "leaf_weights")}
    _, got = compare(model_of(attributes, rows=2, features=1), np.array([[1.2], [1.0]], np.float32))
    np.testing.assert_array_equal(got[:, 0], [2.0, 1.0])


def test_a_tree_that_is_one_leaf_gives_every_row_its_weight():
    # Tree 0 splits on feature 0 at 0.5 (leaves 0 and 1); tree 1 is leaf 2 alone, written as a
    # node whose two branches both name it. (ONNX's reference takes the leaf at the root's
    # node index, 1, for such a tree; the encoding names leaf 2.)
    attributes = {"nodes_featureids": [0, 0], "nodes_truenodeids": [0, 2], "nodes_falsenodeids": [1, 2],
                  "nodes_trueleafs": [1, 1], "nodes_falseleafs": [1, 1], "leaf_targetids": [0, 0, 0],
                  "tree_roots": [0, 1], "n_targets": 1,
                  "nodes_modes": numpy_helper.from_array(np.zeros(2, np.uint8), "nodes_modes"),
                  "nodes_splits": numpy_helper.from_array(np.array([0.5, 0.0], np.float32), "nodes_splits"),
                  "leaf_weights": numpy_helper.from_array(np.array([1.0, 2.0, 40.0], np.float32), "leaf_weights")}
    imported = import_onnx(model_of(attributes, rows=3, features=1))
    x = np.array([[0.25], [0.75], [np.nan]], np.float32)
    got = interpret(imported.graph, {imported.inputs["X"]: x})[imported.outputs["Y"]]
    np.testing.assert_array_equal(got[:, 0], [41.0, 42.0, 42.0])


def test_a_symbolic_batch():
    attributes = random_forest(7, trees=4, features=3, targets=2, modes=(0, 2, 5), depth=3)
    node = helper.make_node("TreeEnsemble", ["X"], ["Y"], domain="ai.onnx.ml", **attributes)
    graph = helper.make_graph([node], "forest", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 3])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 5)])
    model.ir_version = 10
    imported = import_onnx(model)
    assert imported.graph.symbols
    x = features_of(7, 6, 3, np.float32)
    got = interpret(imported.graph, {imported.inputs["X"]: x}, bindings={name: 6 for name in imported.graph.symbols})
    np.testing.assert_allclose(got[imported.outputs["Y"]], ReferenceEvaluator(model).run(None, {"X": x})[0],
                               rtol=1e-6)


def test_the_op_count_does_not_grow_with_the_forest():
    small = import_onnx(model_of(random_forest(1, trees=2, features=3, targets=2, modes=(0, 4), depth=2)))
    large = import_onnx(model_of(random_forest(1, trees=40, features=3, targets=2, modes=(0, 4), depth=6)))
    assert len(large.graph.ops()) == len(small.graph.ops())


def bad(change) -> dict:
    attributes = random_forest(0, trees=1, features=3, targets=2, modes=(0,), depth=2)
    attributes.update(change(attributes))
    return attributes


@pytest.mark.parametrize(("change", "reason"), [
    (lambda forest: {"post_transform": 1}, "post_transform 1"),
    (lambda forest: {"aggregate_function": 7}, "aggregate_function 7"),
    (lambda forest: {"n_targets": 1, "leaf_targetids": [1] * len(forest["leaf_targetids"])},
     "leaf_targetids outside"),
    (lambda forest: {"tree_roots": [99]}, "node 99 out of range"),
    (lambda forest: {"nodes_featureids": [5] * len(forest["nodes_featureids"])}, "feature 5 of 3"),
    (lambda forest: {"nodes_featureids": forest["nodes_featureids"][1:]}, "differ in length"),
    (lambda forest: {"nodes_modes": numpy_helper.from_array(np.full(len(forest["nodes_featureids"]), 6, np.uint8),
                                                            "nodes_modes")}, "set-membership nodes"),
])
def test_refused_with_a_reason(change, reason):
    with pytest.raises(UnsupportedModel, match=reason):
        import_onnx(model_of(bad(change)))


def test_a_member_equal_to_zero_is_a_member():
    # The specification's sets end at NaN only; a feature of 0 is in the set {0, 2}.
    attributes = {"nodes_featureids": [0], "nodes_truenodeids": [0], "nodes_falsenodeids": [1],
                  "nodes_trueleafs": [1], "nodes_falseleafs": [1], "leaf_targetids": [0, 0], "tree_roots": [0],
                  "n_targets": 1, "nodes_modes": numpy_helper.from_array(np.array([6], np.uint8), "nodes_modes"),
                  "nodes_splits": numpy_helper.from_array(np.zeros(1, np.float32), "nodes_splits"),
                  "membership_values": numpy_helper.from_array(np.array([0.0, 2.0, np.nan], np.float32),
                                                               "membership_values"),
                  "leaf_weights": numpy_helper.from_array(np.array([10.0, 20.0], np.float32), "leaf_weights")}
    imported = import_onnx(model_of(attributes, rows=3, features=1))
    x = np.array([[0.0], [2.0], [1.0]], np.float32)
    got = interpret(imported.graph, {imported.inputs["X"]: x})[imported.outputs["Y"]]
    np.testing.assert_array_equal(got[:, 0], [10.0, 10.0, 20.0])


def test_a_branch_back_to_an_ancestor_is_refused():
    attributes = {"nodes_featureids": [0, 0], "nodes_truenodeids": [1, 0], "nodes_falsenodeids": [0, 0],
                  "nodes_trueleafs": [0, 0], "nodes_falseleafs": [1, 1], "leaf_targetids": [0],
                  "tree_roots": [0], "n_targets": 1,
                  "nodes_modes": numpy_helper.from_array(np.zeros(2, np.uint8), "nodes_modes"),
                  "nodes_splits": numpy_helper.from_array(np.zeros(2, np.float32), "nodes_splits"),
                  "leaf_weights": numpy_helper.from_array(np.ones(1, np.float32), "leaf_weights")}
    with pytest.raises(UnsupportedModel, match="its own ancestor"):
        import_onnx(model_of(attributes, features=1))


# --- TreeEnsembleRegressor and TreeEnsembleClassifier (the older form) ------------------
LEGACY_MODES = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ")


def legacy_forest(seed: int, trees: int, features: int, outputs: int, depth: int, prefix: str,
                  one_output: bool = False) -> dict:
    """Attributes of a random forest in the older form: nodes by (tree id, node id), leaves
    as LEAF nodes, and `prefix`_* entries (one or two per leaf) naming what each adds."""
    rng = np.random.default_rng(seed)
    columns = {key: [] for key in ("treeids", "nodeids", "featureids", "modes", "values", "truenodeids",
                                   "falsenodeids", "missing_value_tracks_true")}
    entries = {key: [] for key in ("treeids", "nodeids", "ids", "weights")}
    for tree in range(trees):
        count = [0]

        def grow(level: int, tree=tree, count=count) -> int:
            node = count[0]
            count[0] += 1
            position = len(columns["treeids"])
            leaf = level == depth or (level > 0 and rng.random() < 0.25)
            for key, value in (("treeids", tree), ("nodeids", node), ("featureids", int(rng.integers(features))),
                               ("modes", "LEAF" if leaf else str(rng.choice(LEGACY_MODES))),
                               ("values", float(rng.choice(GRID))), ("truenodeids", 0), ("falsenodeids", 0),
                               ("missing_value_tracks_true", int(rng.integers(2)))):
                columns[key].append(value)
            if leaf:
                for _ in range(1 if one_output else int(rng.integers(1, 3))):
                    for key, value in (("treeids", tree), ("nodeids", node),
                                       ("ids", 0 if one_output else int(rng.integers(outputs))),
                                       ("weights", float(np.round(rng.normal() * 2, 2)))):
                        entries[key].append(value)
                return node
            columns["truenodeids"][position] = grow(level + 1)
            columns["falsenodeids"][position] = grow(level + 1)
            return node

        grow(0)
    attributes = {f"nodes_{key}": value for key, value in columns.items()}
    attributes.update({f"{prefix}_{key}": value for key, value in entries.items()})
    return attributes


def legacy_model(op_type: str, attributes: dict, outputs: int, rows=9, features=3, elem=TensorProto.FLOAT):
    names = ["Y"] if op_type == "TreeEnsembleRegressor" else ["label", "scores"]
    node = helper.make_node(op_type, ["X"], names, domain="ai.onnx.ml", **attributes)
    declared = [helper.make_tensor_value_info(names[0], TensorProto.FLOAT if len(names) == 1 else TensorProto.INT64,
                                              None)]
    if len(names) == 2:
        declared.append(helper.make_tensor_value_info("scores", TensorProto.FLOAT, None))
    graph = helper.make_graph([node], "forest", [helper.make_tensor_value_info("X", elem, [rows, features])],
                              declared)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 3)])
    model.ir_version = 10
    return model


def compare_all(model, x: np.ndarray, rtol=1e-5):
    wants = ReferenceEvaluator(model).run(None, {"X": x})
    imported = import_onnx(model)
    assert imported.outputs == {output.name: output.name for output in model.graph.output}
    ran = interpret(imported.graph, {imported.inputs["X"]: x})
    for output, want in zip(model.graph.output, wants):
        got = ran[imported.outputs[output.name]]
        # The declared type: the reference's PROBIT scores come out f64 from np.vectorize.
        assert got.dtype == helper.tensor_dtype_to_np_dtype(output.type.tensor_type.elem_type), output.name
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-5, err_msg=output.name)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("aggregate", ["SUM", "AVERAGE", "MIN", "MAX"])
def test_tree_ensemble_regressor(seed, aggregate):
    attributes = legacy_forest(seed, trees=3, features=3, outputs=2, depth=3, prefix="target")
    attributes.update(aggregate_function=aggregate, n_targets=2, base_values=[0.5, -1.25])
    compare_all(legacy_model("TreeEnsembleRegressor", attributes, 2), features_of(seed, 9, 3, np.float32))


def test_an_empty_target_of_a_double_min_regressor_is_the_largest_float():
    # The output is f32 (as ONNX declares it): a target no reached leaf names holds f32's
    # largest finite value, where ONNX's reference, keeping f64, holds f64's.
    attributes = legacy_forest(1, trees=2, features=3, outputs=2, depth=3, prefix="target")
    attributes.update(aggregate_function="MIN", n_targets=3)
    model = legacy_model("TreeEnsembleRegressor", attributes, 3, elem=TensorProto.DOUBLE)
    x = features_of(1, 9, 3, np.float64)
    want = ReferenceEvaluator(model).run(None, {"X": x})[0]
    want = np.where(want == np.finfo(np.float64).max, np.finfo(np.float32).max, want)
    imported = import_onnx(model)
    got = interpret(imported.graph, {imported.inputs["X"]: x})[imported.outputs["Y"]]
    assert got.dtype == np.float32 and np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert (got[:, 2] == np.finfo(np.float32).max).all()  # target 2 is named by no leaf


def test_tree_ensemble_regressor_in_double_precision():
    attributes = legacy_forest(5, trees=4, features=3, outputs=3, depth=4, prefix="target")
    attributes.update(n_targets=3)
    compare_all(legacy_model("TreeEnsembleRegressor", attributes, 3, elem=TensorProto.DOUBLE),
                features_of(5, 9, 3, np.float64))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"])
def test_tree_ensemble_classifier(seed, post):
    attributes = legacy_forest(seed + 20, trees=3, features=3, outputs=3, depth=3, prefix="class")
    attributes.update(classlabels_int64s=[4, 7, 9], post_transform=post)
    compare_all(legacy_model("TreeEnsembleClassifier", attributes, 3), features_of(seed, 9, 3, np.float32),
                rtol=1e-4)


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "PROBIT"])
def test_tree_ensemble_classifier_binary(post):
    attributes = legacy_forest(31, trees=2, features=3, outputs=1, depth=3, prefix="class", one_output=True)
    attributes.update(classlabels_int64s=[0, 1], post_transform=post, base_values=[0.25, 0.25])
    compare_all(legacy_model("TreeEnsembleClassifier", attributes, 2), features_of(31, 9, 3, np.float32),
                rtol=1e-4)


def test_a_classifier_with_one_label_is_refused():
    attributes = legacy_forest(31, trees=2, features=3, outputs=1, depth=3, prefix="class", one_output=True)
    attributes.update(classlabels_int64s=[1])
    with pytest.raises(UnsupportedModel, match="1 class label"):
        import_onnx(legacy_model("TreeEnsembleClassifier", attributes, 1))


def test_string_labels_convert_when_only_the_scores_are_read():
    attributes = legacy_forest(40, trees=2, features=3, outputs=2, depth=2, prefix="class")
    attributes.update(classlabels_strings=["cat", "dog"])
    node = helper.make_node("TreeEnsembleClassifier", ["X"], ["", "scores"], domain="ai.onnx.ml", **attributes)
    graph = helper.make_graph([node], "forest", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 3])],
                              [helper.make_tensor_value_info("scores", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 3)])
    imported = import_onnx(model)
    assert list(imported.outputs) == ["scores"]
    labelled = helper.make_node("TreeEnsembleClassifier", ["X"], ["label", "scores"], domain="ai.onnx.ml",
                                **attributes)
    graph = helper.make_graph([labelled], "forest", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 3])],
                              [helper.make_tensor_value_info("label", TensorProto.STRING, None)])
    with pytest.raises(UnsupportedModel, match="string labels"):
        import_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                             helper.make_opsetid("ai.onnx.ml", 3)]))


@pytest.mark.parametrize("target", ["cpu", "cuda", "rocm", "metal", "gpu", "vulkan"])
def test_an_imported_classifier_runs_in_every_targets_arena(target):
    """The labels come out exact on every target, those that store i64 values in 4 bytes
    (rocm's f32 sizing) included: the best class's position needs no sentinel past 32 bits."""
    import rlxir

    attributes = legacy_forest(3, trees=6, features=4, outputs=3, depth=4, prefix="class")
    attributes.update(classlabels_int64s=[0, 1, 2], post_transform="SOFTMAX")
    imported = import_onnx(legacy_model("TreeEnsembleClassifier", attributes, 3, rows=8, features=4))
    x = features_of(3, 8, 4, np.float32)
    check = rlxir.check_execution(imported.graph, rlxir.compile(imported.graph, target),
                                  inputs={imported.inputs["X"]: x})
    assert check.run.poisoned_reads == ()
    assert check.matched, check.summary()


def test_one_base_value_serves_every_class():
    """scikit-learn's binary gradient boosting: every weight on class 0, one base value."""
    attributes = legacy_forest(41, trees=3, features=3, outputs=1, depth=3, prefix="class", one_output=True)
    attributes.update(classlabels_int64s=[0, 1], post_transform="LOGISTIC", base_values=[0.3])
    compare_all(legacy_model("TreeEnsembleClassifier", attributes, 2), features_of(41, 9, 3, np.float32))
    regressor = legacy_forest(42, trees=2, features=3, outputs=2, depth=3, prefix="target")
    regressor.update(n_targets=2, base_values=[1.5])
    compare_all(legacy_model("TreeEnsembleRegressor", regressor, 2), features_of(42, 9, 3, np.float32))


def test_an_attribute_of_the_wrong_type_is_a_refusal():
    attributes = random_forest(0, trees=1, features=3, targets=2, modes=(0,), depth=2)
    attributes["aggregate_function"] = "SUM"  # TreeEnsemble declares an int
    with pytest.raises(UnsupportedModel, match="its attribute aggregate_function is of type STRING"):
        import_onnx(model_of(attributes))
