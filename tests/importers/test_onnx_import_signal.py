"""ONNX DFT and STFT: matmuls by constant cos/sin matrices, run against onnxruntime and the
onnx reference evaluator (forward, inverse, onesided, cropped and padded lengths, axes)."""

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


def close_to_onnx(model, feeds, reference=False, atol=1e-4):
    got, want = run_imported(model, feeds, {"B": 1}), expected_outputs(model, feeds, reference)
    for have, expected in zip(got, want):
        assert have.shape == expected.shape
        np.testing.assert_allclose(have, expected, rtol=1e-4, atol=atol)


def dft_model(shape, opset: int, axis: int, length=None, **attributes):
    inputs, initializers = ["x"], []
    if length is not None:
        inputs.append("n")
        initializers.append(("n", np.array(length, np.int64)))
    if opset >= 20:
        inputs += [""] * (2 - len(inputs)) + ["axis"]
        initializers.append(("axis", np.array(axis, np.int64)))
    else:
        attributes["axis"] = axis
    node = helper.make_node("DFT", inputs, ["y"], **attributes)
    return make_model([node], [("x", F, list(shape))], [("y", F, None)], initializers, opset=opset)


@pytest.mark.parametrize("opset", [17, 20])
@pytest.mark.parametrize("axis", [1, 2, -2])
@pytest.mark.parametrize("parts", [1, 2])
@pytest.mark.parametrize("inverse", [0, 1])
def test_dft_matches_onnxruntime(inverse, parts, axis, opset):
    if opset < 20 and axis < 0:
        pytest.skip("a negative axis attribute is opset 20's")
    x = np.random.default_rng(parts).standard_normal((1, 6, 5, parts)).astype(np.float32)
    close_to_onnx(dft_model(x.shape, opset, axis, inverse=inverse), {"x": x})


@pytest.mark.parametrize("length", [4, 9])
@pytest.mark.parametrize("onesided", [0, 1])
def test_dft_of_a_cropped_or_padded_real_signal(onesided, length):
    x = np.random.default_rng(3).standard_normal((1, 6, 3, 1)).astype(np.float32)
    model = dft_model(x.shape, 20, 1, length, onesided=onesided)
    close_to_onnx(model, {"x": x})
    assert "matmul" in ops_of(import_onnx(model))


@pytest.mark.parametrize("length", [None, 8, 9])
def test_inverse_onesided_dft_is_the_real_signal_of_a_hermitian_spectrum(length):
    signal = np.random.default_rng(4).standard_normal((1, length or 8, 3)).astype(np.float32)
    spectrum = np.fft.rfft(signal, axis=1)
    x = np.stack([spectrum.real, spectrum.imag], axis=-1).astype(np.float32)
    model = dft_model(x.shape, 20, 1, length, inverse=1, onesided=1)
    close_to_onnx(model, {"x": x}, reference=True)
    (got,) = run_imported(model, {"x": x}, {"B": 1})
    np.testing.assert_allclose(got[..., 0], signal, atol=1e-5)


@pytest.mark.parametrize("windowed", [False, True])
@pytest.mark.parametrize("onesided", [0, 1])
def test_stft(onesided, windowed):
    signal = np.random.default_rng(5).standard_normal((1, 64, 1)).astype(np.float32)
    inputs = ["signal", "step"] + (["window"] if windowed else ["", "length"])
    initializers = [("step", np.array(8, np.int64))]
    initializers += [("window", np.hanning(16).astype(np.float32))] if windowed else [("length", np.array(16, np.int64))]
    node = helper.make_node("STFT", inputs, ["y"], onesided=onesided)
    model = make_model([node], [("signal", F, [1, 64, 1])], [("y", F, None)], initializers, opset=17)
    close_to_onnx(model, {"signal": signal})


def test_onesided_dft_of_a_complex_signal_keeps_the_first_half():
    x = np.random.default_rng(6).standard_normal((1, 6, 3, 2)).astype(np.float32)
    close_to_onnx(dft_model(x.shape, 20, 1, onesided=1), {"x": x}, reference=True)


def test_dft_along_the_complex_axis_is_refused():
    with pytest.raises(UnsupportedModel, match="a DFT along the last"):
        import_onnx(dft_model((1, 6, 2), 20, -1))


@pytest.mark.parametrize("periodic", [0, 1])
@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
def test_windows_of_a_constant_size_are_constants(op, periodic):
    nodes = [helper.make_node(op, ["size"], ["w"], periodic=periodic), helper.make_node("Mul", ["x", "w"], ["y"])]
    model = make_model(nodes, [("x", F, [1, 10])], [("y", F, None)], [("size", np.array(10, np.int32))], opset=17)
    assert ops_of(import_onnx(model)) == ["mul"]
    close_to_onnx(model, {"x": np.ones((1, 10), np.float32)}, reference=True, atol=1e-6)


def test_mel_weight_matrix_of_constants():
    names = ["bins", "length", "rate", "low", "high"]
    values = [np.array(8, np.int64), np.array(64, np.int64), np.array(8000, np.int64), np.array(0.0, np.float32),
              np.array(3000.0, np.float32)]
    nodes = [helper.make_node("MelWeightMatrix", names, ["m"]), helper.make_node("MatMul", ["x", "m"], ["y"])]
    model = make_model(nodes, [("x", F, [1, 33])], [("y", F, None)], list(zip(names, values)), opset=17)
    close_to_onnx(model, {"x": np.random.default_rng(7).random((1, 33)).astype(np.float32)}, reference=True, atol=1e-5)


def test_a_window_of_a_run_time_size_is_refused():
    model = make_model([helper.make_node("HannWindow", ["size"], ["w"])], [("size", I64, [])], [("w", F, None)],
                       opset=17)
    with pytest.raises(UnsupportedModel, match=r"\(HannWindow\): its size \(input 0\) must be known while importing"):
        import_onnx(model)
