"""ONNX elementwise math the IR has no op for (activations, rounding, trigonometry, Det):
imported as decompositions and run against onnxruntime (or, for ops newer than it, the
onnx package's reference evaluator) on chosen inputs, and the trigonometry against NumPy
to a few units in the last place."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402
from onnx_models import run_onnxruntime  # noqa: E402
from test_onnx_import_ops import make_model  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402

F, F16, F64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE
ELEMENT = {np.dtype(np.float32): F, np.dtype(np.float16): F16, np.dtype(np.float64): F64,
           np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8,
           np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64,
           np.dtype(np.uint32): TensorProto.UINT32, np.dtype(bool): TensorProto.BOOL}


def run_imported(model, feeds: dict, bindings=None) -> list[np.ndarray]:
    imported = import_onnx(model)
    inputs = {imported.inputs[name]: array for name, array in feeds.items()}
    got = interpret(imported.graph, inputs, dict(imported.params), bindings)
    return [got[value] for value in imported.outputs.values()]


def expected_outputs(model, feeds: dict, reference: bool) -> list[np.ndarray]:
    if reference:
        from onnx.reference import ReferenceEvaluator

        return ReferenceEvaluator(model).run(None, feeds)
    return run_onnxruntime(model, feeds)


def same_as_onnx(op: str, feeds: dict, opset: int = 18, reference: bool = False, rtol=1e-6, atol=1e-7,
                 outputs: int = 1, **attributes) -> list[np.ndarray]:
    """One `op` node over `feeds` (named inputs, batch 1 leading), imported and run: its
    outputs must equal onnxruntime's (the reference evaluator's with `reference`)."""
    names = list(feeds)
    out_names = [f"y{index}" for index in range(outputs)]
    node = helper.make_node(op, names, out_names, **attributes)
    model = make_model([node], [(name, ELEMENT[array.dtype], list(array.shape)) for name, array in feeds.items()],
                       [(name, 0, None) for name in out_names], opset=opset)
    for output in model.graph.output:
        output.type.tensor_type.ClearField("elem_type")
    model = onnx.shape_inference.infer_shapes(model)
    got, want = run_imported(model, feeds), expected_outputs(model, feeds, reference)
    for have, expected in zip(got, want):
        assert have.shape == expected.shape
        assert have.dtype == expected.dtype
        np.testing.assert_allclose(have.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol)
    return got


def samples(dtype=np.float32, count: int = 64, seed: int = 0) -> np.ndarray:
    """[1, count] values over several magnitudes, both signs, zero included."""
    rng = np.random.default_rng(seed)
    values = 10.0 ** rng.uniform(-6, 1.5, count) * rng.choice([-1, 1], count)
    values[:4] = [0.0, 0.5, -0.5, 1.0]
    return values.astype(dtype)[None]


# --- activations -----------------------------------------------------------------------
@pytest.mark.parametrize("op, attributes", [
    ("Selu", {}), ("Selu", {"alpha": 2.0, "gamma": 0.5}), ("Celu", {}), ("Celu", {"alpha": 0.7}),
    ("ThresholdedRelu", {}), ("ThresholdedRelu", {"alpha": 0.3}), ("Shrink", {}),
    ("Shrink", {"bias": 0.25, "lambd": 0.1}), ("Softsign", {}), ("Mish", {}),
])
def test_activations_match_onnxruntime(op, attributes):
    opset = {"Mish": 18, "Celu": 18}.get(op, 17)
    same_as_onnx(op, {"x": samples()}, opset=opset, rtol=2e-6, atol=1e-7, **attributes)


@pytest.mark.parametrize("alpha", [1.0, 1.702])
def test_swish_matches_the_reference(alpha):
    same_as_onnx("Swish", {"x": samples()}, opset=24, reference=True, rtol=2e-6, alpha=alpha)


def test_shrink_on_integers_and_its_refusal():
    x = np.arange(-6, 6, dtype=np.int32)[None]
    same_as_onnx("Shrink", {"x": x}, opset=17, bias=2.0, lambd=1.5)
    with pytest.raises(UnsupportedModel, match="Shrink of an integer tensor with the fractional bias 0.5"):
        same_as_onnx("Shrink", {"x": x}, opset=17, bias=0.5)


def test_half_precision_activation_is_computed_wide_and_rounded_once():
    got = same_as_onnx("Selu", {"x": samples(np.float16)}, opset=17, rtol=1e-3, atol=1e-4)
    assert got[0].dtype == np.float16


@pytest.mark.parametrize("opset, shape, slope_shape", [(6, [1, 3, 2, 4], (3, 1, 1)), (9, [1, 2, 3, 4], (4,))])
def test_prelu_slope_per_channel_before_opset_7(opset, shape, slope_shape):
    """Opset 6 applies a [C] slope along axis 1; from opset 7 it broadcasts (so a [C] slope
    there belongs to the last axis)."""
    x = samples(count=24).reshape(shape) * 10
    slope = np.array([0.5, -2.0, 3.0, 0.25][:int(np.prod(slope_shape))], np.float32)
    node = helper.make_node("PRelu", ["x", "slope"], ["y"])
    model = make_model([node], [("x", F, shape)], [("y", F, None)], [("slope", slope)], opset=opset)
    (got,) = run_imported(model, {"x": x})
    np.testing.assert_allclose(got, np.where(x >= 0, x, x * slope.reshape(slope_shape)), rtol=1e-6)


@pytest.mark.parametrize("opset, axis", [(11, 1), (11, 2), (13, 1), (13, -1)])
def test_log_softmax_keeps_tiny_probabilities(opset, axis):
    """Scores 200 apart: a log of the softmax would give log(0) = -inf."""
    x = (samples(count=24).reshape(1, 2, 3, 4) * 100).astype(np.float32)
    same_as_onnx("LogSoftmax", {"x": x}, opset=opset, rtol=1e-5, atol=1e-4, axis=axis)
    (got,) = run_imported(make_model([helper.make_node("LogSoftmax", ["x"], ["y"], axis=axis)],
                                     [("x", F, [1, 2, 3, 4])], [("y", F, None)], opset=opset), {"x": x})
    assert np.isfinite(got).all()


def test_softplus_and_elu_stay_accurate_at_the_extremes():
    x = np.array([[-100.0, -30.0, -1e-6, 0.0, 1e-6, 30.0, 100.0, 1000.0]], np.float32)
    (softplus,) = run_imported(make_model([helper.make_node("Softplus", ["x"], ["y"])], [("x", F, [1, 8])],
                                          [("y", F, None)], opset=17), {"x": x})
    np.testing.assert_allclose(softplus, np.logaddexp(0, x.astype(np.float64)), rtol=1e-6, atol=1e-44)  # f32 subnormals
    same_as_onnx("Elu", {"x": samples()}, opset=17, rtol=2e-6, alpha=0.7)


@pytest.mark.parametrize("base, exponent", [(np.int32, np.float32), (np.int64, np.int64), (np.float32, np.int32)])
def test_pow_keeps_the_base_type(base, exponent):
    a = np.array([[3, 2, 5, 7]], base)
    b = np.array([[1.5, 3, 0.5, 2]]).astype(exponent)
    same_as_onnx("Pow", {"a": a, "b": b}, opset=15, rtol=1e-6)


# --- rounding and tests ----------------------------------------------------------------
def test_round_halves_to_even_and_keeps_inf_and_nan():
    x = np.array([[0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 2.4, -2.6, 1e9 + 0.5, np.inf, -np.inf, np.nan,
                   8388609.0]], np.float32)
    got = same_as_onnx("Round", {"x": x}, opset=17)
    assert np.array_equal(got[0], np.round(x), equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
def test_sign(dtype):
    x = np.array([[-3, -1, 0, 2, 7]], dtype)
    same_as_onnx("Sign", {"x": x}, opset=17)


@pytest.mark.parametrize("positive, negative", [(1, 1), (1, 0), (0, 1)])
def test_isinf_with_each_direction(positive, negative):
    x = np.array([[1.0, np.inf, -np.inf, np.nan, 3.4e38, -3.4e38]], np.float32)
    same_as_onnx("IsInf", {"x": x}, opset=17, detect_positive=positive, detect_negative=negative)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_mod_with_the_divisors_sign_on_floats_too(dtype):
    """Opset 28 defines fmod=0 on floats (the floored remainder); before it is refused."""
    a = np.array([[-4.5, 7, -3, 5, 0, 9]], dtype)
    b = np.array([[2, -3, 4, -2.5, 3, 4]], dtype)
    same_as_onnx("Mod", {"a": a, "b": b}, opset=28, reference=True, rtol=1e-6)
    if dtype is np.int32:
        same_as_onnx("Mod", {"a": a, "b": b}, opset=17)
        return
    with pytest.raises(UnsupportedModel, match="Mod with fmod=0 on floats at opset 17"):
        same_as_onnx("Mod", {"a": a, "b": b}, opset=17)


# --- trigonometry ----------------------------------------------------------------------
TRIGONOMETRY = {"Tan": np.tan, "Sinh": np.sinh, "Cosh": np.cosh, "Asinh": np.arcsinh, "Acosh": np.arccosh,
                "Atanh": np.arctanh, "Atan": np.arctan, "Asin": np.arcsin, "Acos": np.arccos}


def _domain(op: str, dtype) -> np.ndarray:
    rng = np.random.default_rng(3)
    wide = np.concatenate([rng.uniform(-1, 1, 2000), rng.standard_normal(2000) * 10,
                           10.0 ** rng.uniform(-8, 4, 2000) * rng.choice([-1, 1], 2000), [0.0, 1.0, -1.0, 0.5]])
    if op == "Acosh":
        wide = np.abs(wide) + 1
    if op in ("Asin", "Acos", "Atanh"):
        wide = np.clip(wide, -1, 1)
    if op in ("Sinh", "Cosh"):
        wide = wide[np.abs(wide) < 80]
    return wide.astype(dtype)[None]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", sorted(TRIGONOMETRY))
def test_trigonometry_is_accurate_to_a_few_ulps(op, dtype):
    x = _domain(op, dtype)
    node = helper.make_node(op, ["x"], ["y"])
    element = ELEMENT[np.dtype(dtype)]
    model = make_model([node], [("x", element, list(x.shape))], [("y", element, list(x.shape))], opset=22)
    (got,) = run_imported(model, {"x": x})
    exact = TRIGONOMETRY[op](x.astype(np.float64))
    finite = np.isfinite(exact)
    ulps = np.abs(got.astype(np.float64) - exact)[finite] / np.spacing(np.abs(exact[finite]).astype(dtype))
    assert ulps.max() <= 6, (op, float(ulps.max()))
    assert np.array_equal(np.isnan(got), np.isnan(exact))


@pytest.mark.parametrize("op", ["Atan", "Asin", "Sinh"])
def test_trigonometry_edges_and_half_precision(op):
    special = {"Atan": [np.inf, -np.inf, 1e30, 0.0], "Asin": [1.0, -1.0, 1.5, 0.0], "Sinh": [1e-30, -1e-6, 0.0, 9.0]}
    x = np.array([special[op]], np.float32)
    (got,) = run_imported(make_model([helper.make_node(op, ["x"], ["y"])], [("x", F, [1, 4])], [("y", F, [1, 4])],
                                     opset=22), {"x": x})
    np.testing.assert_allclose(got, TRIGONOMETRY[op](x.astype(np.float64)), rtol=1e-6)
    same_as_onnx(op, {"x": np.clip(samples(np.float16), -0.9, 0.9)}, opset=17, rtol=1e-3, atol=1e-4)


def test_trigonometry_of_an_integer_tensor_is_refused():
    with pytest.raises(UnsupportedModel, match="Atan of a i32 tensor"):
        same_as_onnx("Atan", {"x": np.arange(4, dtype=np.int32)[None]}, opset=17)
