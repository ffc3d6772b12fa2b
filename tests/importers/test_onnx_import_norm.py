"""ONNX normalisations (Layer, RMS, Group, MeanVariance, Lp) and Hardmax: imported onto
core ops, run against onnxruntime, and refused where ONNX defines no meaning."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx_models import run_onnxruntime  # noqa: E402
from test_onnx_import_ops import check, make_model, ops_of, weights  # noqa: E402

from rlxir.compiler.compile import compile  # noqa: E402
from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402

F, F16 = TensorProto.FLOAT, TensorProto.FLOAT16


@pytest.mark.parametrize("axis", [1, -1])
def test_layernorm_is_the_core_op(axis):
    shape = [2, 3, 4]
    params = shape[axis:]
    node = helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=axis, epsilon=1e-3)
    model = make_model([node], [("x", F, shape)], [("y", F, shape)],
                       [("scale", weights(*params)), ("bias", weights(*params, seed=1))])
    imported = check(model, {"B": 2})
    assert ops_of(imported) == ["layernorm"]
    compile(imported.graph, "cpu", {"B": 2})


def test_layernorm_scale_with_leading_unit_dims():
    """Scale [1, 1, 4] broadcasts to x [2, 3, 4]; its normalised part is [4]."""
    node = helper.make_node("LayerNormalization", ["x", "scale"], ["y"])
    model = make_model([node], [("x", F, [2, 3, 4])], [("y", F, [2, 3, 4])], [("scale", weights(1, 1, 4))])
    check(model, {"B": 2})


def test_layernorm_mean_and_inverse_std_outputs():
    node = helper.make_node("LayerNormalization", ["x", "scale"], ["y", "mean", "inv_std"], axis=2)
    model = make_model([node], [("x", F, [2, 3, 4, 5])],
                       [("y", F, [2, 3, 4, 5]), ("mean", F, [2, 3, 1, 1]), ("inv_std", F, [2, 3, 1, 1])],
                       [("scale", weights(4, 5))])
    imported = check(model, {"B": 2})
    assert "rsqrt" in ops_of(imported) and "layernorm" not in ops_of(imported)


def test_layernorm_of_f16_computes_in_the_stash_type():
    node = helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"])
    model = make_model([node], [("x", F16, [2, 8])], [("y", F16, [2, 8])],
                       [("scale", weights(8).astype(np.float16)), ("bias", weights(8, seed=1).astype(np.float16))])
    imported = check(model, {"B": 2}, rtol=2e-3, atol=2e-3)
    graph = imported.graph
    norm = next(name for name in graph.ops() if graph.op(name) == "layernorm")
    assert graph.type(norm).dtype.value == "f32"


def test_rmsnorm_with_a_broadcast_scale():
    node = helper.make_node("RMSNormalization", ["x", "scale"], ["y"], axis=-2, epsilon=1e-4)
    model = make_model([node], [("x", F, [2, 3, 4])], [("y", F, [2, 3, 4])], [("scale", weights(4))], opset=23)
    imported = check(model, {"B": 2})
    assert "rmsnorm" in ops_of(imported)


def test_group_norm_per_channel_scale():
    node = helper.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=2, epsilon=1e-3)
    model = make_model([node], [("x", F, [2, 4, 3, 3])], [("y", F, [2, 4, 3, 3])],
                       [("scale", weights(4)), ("bias", weights(4, seed=1))], opset=21)
    imported = check(model, {"B": 2})
    assert "layernorm" in ops_of(imported)


def test_group_norm_opset_18_scales_per_group():
    node = helper.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=2)
    model = make_model([node], [("x", F, [2, 4, 3])], [("y", F, [2, 4, 3])],
                       [("scale", weights(2)), ("bias", weights(2, seed=1))], opset=18)
    check(model, {"B": 2})


def test_mean_variance_normalization():
    node = helper.make_node("MeanVarianceNormalization", ["x"], ["y"], axes=[0, 2])
    check(make_model([node], [("x", F, [3, 4, 5])], [("y", F, [3, 4, 5])], opset=13), {"B": 3})


@pytest.mark.parametrize("p", [1, 2])
def test_lp_normalization(p):
    node = helper.make_node("LpNormalization", ["x"], ["y"], axis=1, p=p)
    check(make_model([node], [("x", F, [2, 5, 3])], [("y", F, [2, 5, 3])], opset=22), {"B": 2})


def test_lp_normalization_with_another_p_is_refused():
    node = helper.make_node("LpNormalization", ["x"], ["y"], p=3)
    model = make_model([node], [("x", F, [2, 5])], [("y", F, [2, 5])], opset=22)
    with pytest.raises(UnsupportedModel, match="p=3"):
        import_onnx(model)


@pytest.mark.parametrize(("opset", "axis"), [(13, 1), (11, 1)])
def test_hardmax_marks_the_first_maximum(opset, axis):
    node = helper.make_node("Hardmax", ["x"], ["y"], axis=axis)
    ties = np.array([[[1, 3, 3], [0, 3, 1]], [[2, 2, 2], [5, 1, 5]]], np.float32)
    model = make_model([node], [("x", F, [2, 2, 3])], [("y", F, [2, 2, 3])], opset=opset)
    imported = check(model, {"B": 2})
    got = interpret(imported.graph, {imported.inputs["x"]: ties}, {}, {"B": 2})[imported.outputs["y"]]
    np.testing.assert_array_equal(got, run_onnxruntime(model, {"x": ties})[0])


def test_batchnorm_in_training_mode_normalises_by_the_batch_and_updates_the_running_statistics():
    """Against ONNX's reference evaluator (onnxruntime's inference build has no training mode)."""
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(3)
    weights = [numpy_helper.from_array(array.astype(np.float32), name) for name, array in
               (("scale", rng.uniform(0.5, 1.5, 3)), ("bias", rng.standard_normal(3)),
                ("mean", rng.standard_normal(3)), ("var", rng.uniform(0.5, 1.5, 3)))]
    node = helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y", "running_mean", "running_var"],
                            training_mode=1, momentum=0.8, epsilon=1e-3)
    graph = helper.make_graph([node], "bn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5])],
                              [helper.make_tensor_value_info(name, TensorProto.FLOAT, None)
                               for name in ("y", "running_mean", "running_var")], initializer=weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    expected = ReferenceEvaluator(model).run(None, {"x": x})
    imported = import_onnx(model)
    got = interpret(imported.graph, {imported.inputs["x"]: x}, dict(imported.params))
    for name, want in zip(("y", "running_mean", "running_var"), expected):
        np.testing.assert_allclose(got[imported.outputs[name]], want, rtol=1e-5, atol=1e-5, err_msg=name)
