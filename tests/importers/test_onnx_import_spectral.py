"""The ONNX importer's Fourier transforms and window generators (onnx_signal), checked
against onnxruntime where it runs the case and ONNX's reference implementation where it
does not (one-sided inverse DFT, dft_length past the signal)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from test_onnx_import_ops import make_model as model_of  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402

F, D, I64 = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64


def make_model(nodes, inputs, outputs, initializers=(), opset=20):
    return model_of(nodes, inputs, outputs, initializers, opset)


def check(model, feeds: dict, onnxruntime=True, rtol=1e-5, atol=1e-5):
    """The interpreter's outputs on `feeds` against onnxruntime's (or the reference's)."""
    imported = import_onnx(model)
    if onnxruntime:
        from onnx_models import run_onnxruntime

        want = run_onnxruntime(model, feeds)
    else:
        want = ReferenceEvaluator(model).run(None, feeds)
    got = interpret(imported.graph, {imported.inputs[name]: array for name, array in feeds.items()},
                    dict(imported.params))
    for (name, value), expected in zip(imported.outputs.items(), want):
        have = got[value]
        assert have.shape == expected.shape, (name, have.shape, expected.shape)
        assert have.dtype == expected.dtype, (name, have.dtype, expected.dtype)
        np.testing.assert_allclose(have, expected, rtol=rtol, atol=atol, err_msg=name)
    return imported


def signal(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def dft_model(x_shape, attrs, length=None, axis=None, out_type=F):
    inputs = ["x", "length" if length is not None else "", "axis" if axis is not None else ""]
    while inputs[-1] == "":
        inputs.pop()
    initializers = [(name, np.array(value, np.int64)) for name, value in (("length", length), ("axis", axis))
                    if value is not None]
    node = helper.make_node("DFT", inputs, ["y"], **attrs)
    return make_model([node], [("x", out_type, x_shape)], [("y", out_type, None)], initializers)


@pytest.mark.parametrize("shape, axis", [([2, 8, 1], 1), ([2, 5, 3, 2], 1), ([2, 5, 3, 2], -3), ([3, 6, 2], -2)])
def test_dft_forward_and_inverse(shape, axis):
    check(dft_model(shape, {}, axis=axis), {"x": signal(*shape)})
    check(dft_model(shape, {"inverse": 1}, axis=axis), {"x": signal(*shape, seed=1)})


def test_dft_onesided_forward_and_dft_length():
    check(dft_model([2, 9, 1], {"onesided": 1}), {"x": signal(2, 9, 1)})
    check(dft_model([2, 9, 2], {}, length=12), {"x": signal(2, 9, 2)}, onnxruntime=False)
    check(dft_model([2, 9, 2], {}, length=5), {"x": signal(2, 9, 2)}, onnxruntime=False)


@pytest.mark.parametrize("length", [None, 7, 10])
def test_dft_onesided_inverse_is_a_real_signal(length):
    check(dft_model([3, 5, 2], {"inverse": 1, "onesided": 1}, length=length), {"x": signal(3, 5, 2)},
          onnxruntime=False)


def test_dft_opset17_axis_attribute_in_f64():
    node = helper.make_node("DFT", ["x"], ["y"], axis=2)
    model = make_model([node], [("x", D, [2, 3, 4, 1])], [("y", D, None)], opset=17)
    check(model, {"x": signal(2, 3, 4, 1).astype(np.float64)}, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("onesided", [0, 1])
def test_stft_with_window(onesided):
    window = np.hanning(6).astype(np.float32)
    node = helper.make_node("STFT", ["x", "step", "window"], ["y"], onesided=onesided)
    model = make_model([node], [("x", F, [2, 20, 1])], [("y", F, None)],
                       [("step", np.array(3, np.int64)), ("window", window)], opset=17)
    check(model, {"x": signal(2, 20, 1)})


def test_stft_frame_length_without_window():
    node = helper.make_node("STFT", ["x", "step", "", "length"], ["y"], onesided=0)
    model = make_model([node], [("x", F, [1, 16, 2])], [("y", F, None)],
                       [("step", np.array(4, np.int64)), ("length", np.array(8, np.int64))], opset=17)
    check(model, {"x": signal(1, 16, 2)}, onnxruntime=False)


@pytest.mark.parametrize("op_type", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
def test_windows_are_evaluated_while_importing(op_type, periodic):
    node = helper.make_node(op_type, ["size"], ["w"], periodic=periodic, output_datatype=D)
    scaled = helper.make_node("Mul", ["x", "w"], ["y"])
    model = make_model([node, scaled], [("x", D, [10])], [("y", D, [10])], [("size", np.array(10, np.int64))],
                       opset=17)
    imported = check(model, {"x": np.ones(10)}, rtol=1e-6, atol=1e-7)  # onnxruntime computes in f32
    assert [imported.graph.op(name) for name in imported.graph.ops()] == ["mul"]


def test_mel_weight_matrix():
    node = helper.make_node("MelWeightMatrix", ["bins", "length", "rate", "low", "high"], ["m"])
    model = make_model([node], [], [("m", F, None)],
                       [("bins", np.array(8, np.int64)), ("length", np.array(64, np.int64)),
                        ("rate", np.array(16000, np.int64)), ("low", np.array(20, np.float32)),
                        ("high", np.array(8000, np.float32))], opset=17)
    check(model, {})


# --- refusals ----------------------------------------------------------------------------
def test_window_of_run_time_size_is_refused_with_why():
    node = helper.make_node("HannWindow", ["size"], ["w"])
    model = make_model([node], [("size", I64, [])], [("w", F, None)], opset=17)
    with pytest.raises(UnsupportedModel, match=r"\(HannWindow\): its size \(input 0\) must be known while importing, "
                                               r"but it is computed at run time"):
        import_onnx(model)


def test_dft_along_the_parts_dim_is_refused():
    with pytest.raises(UnsupportedModel, match=r"a DFT along the last \(real/imaginary\) axis"):
        import_onnx(dft_model([2, 8, 2], {}, axis=-1))
