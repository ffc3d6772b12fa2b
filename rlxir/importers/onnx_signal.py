"""ONNX op -> core ops: the discrete Fourier transform (DFT) and the short-time one (STFT).

A signal is real ([..., 1]) or complex ([..., 2]: real and imaginary parts) in its last
dim; the transform is `rlxir.importers.fourier` (matmuls by cos/sin matrices), the inverse
scaled by 1/n. ``dft_length`` crops or zero-pads the signal to n (a cropped position
simply has no row), ``onesided`` keeps the n // 2 + 1 first frequencies (forward) or reads
them as a Hermitian spectrum whose real signal of n points it returns (inverse), as
NumPy's fft, rfft, ifft and irfft do, which ONNX's reference uses. STFT gathers the frames
(a constant index table), weights them by the window and transforms each. The windows
(Hann, Hamming, Blackman) and MelWeightMatrix of sizes known while importing are evaluated
then, as constants.
"""

from __future__ import annotations

import numpy as np

from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.fourier import fourier
from rlxir.importers.onnx_context import concrete, onnx_dtype
from rlxir.importers.onnx_ops import hint, operand, optional_input, static_input
from rlxir.importers.onnx_registry import register
from rlxir.ops import normalize_axis


def convert_dft(ctx, node, attrs):
    x = ctx.value(node.input[0])
    type_ = ctx.builder.type(x)
    if type_.rank < 2 or type_.shape[-1] not in (1, 2) or not type_.dtype.is_float:
        raise UnsupportedModel(f"DFT of a {type_}", expected="a float signal [..., 1] (real) or [..., 2] (complex)")
    if ctx.opset >= 20:
        given = optional_input(node, 2)
        axis = int(concrete(static_input(ctx, node, 2, "axis"), "DFT's axis").reshape(-1)[0]) if given else -2
    else:
        axis = int(attrs.get("axis", 1))
    axis = normalize_axis(axis, type_.rank)
    if axis == type_.rank - 1:
        raise UnsupportedModel("a DFT along the last (real/imaginary) axis", expected="a signal axis")
    inverse, onesided = bool(attrs.get("inverse", 0)), bool(attrs.get("onesided", 0))
    rows = type_.shape[axis]
    if optional_input(node, 1):
        n = int(concrete(static_input(ctx, node, 1, "dft_length"), "DFT's dft_length").reshape(-1)[0])
    else:
        n = 2 * (rows - 1) if inverse and onesided and isinstance(rows, int) else rows
    if not isinstance(n, int) or n < 1:
        raise UnsupportedModel(f"a DFT of length {n}", expected="a static, positive length")
    return [fourier(ctx.builder, x, axis, n, inverse, onesided, hint(node))]


def convert_stft(ctx, node, attrs):
    """STFT(signal [batch, length, 1 or 2], frame_step, window?, frame_length?) ->
    [batch, frames, bins, 2], frames = (length - frame_length) // frame_step + 1."""
    signal = ctx.value(node.input[0])
    type_ = ctx.builder.type(signal)
    if type_.rank != 3 or type_.shape[-1] not in (1, 2) or not isinstance(type_.shape[1], int):
        raise UnsupportedModel(f"STFT of a {type_}", expected="a signal [batch, static length, 1 or 2]")
    step = int(concrete(static_input(ctx, node, 1, "frame_step"), "STFT's frame_step").reshape(-1)[0])
    window = optional_input(node, 2)
    length = type_.shape[1]
    if optional_input(node, 3):
        frame = int(concrete(static_input(ctx, node, 3, "frame_length"), "STFT's frame_length").reshape(-1)[0])
    else:
        frame = ctx.shape(window)[0] if window else length
    if window and ctx.shape(window)[0] != frame:
        raise UnsupportedModel(f"STFT with a window of {ctx.shape(window)[0]} for frames of {frame}",
                               expected="a window as long as a frame")
    if step < 1 or not 1 <= frame <= length:
        raise UnsupportedModel(f"STFT frames of {frame} every {step} of a signal of {length}",
                               expected="a positive step and 1 <= frame_length <= the signal length")
    name = hint(node)
    starts = np.arange((length - frame) // step + 1)[:, None] * step
    index = ctx.builder.tensor(f"{name}.frames", (starts + np.arange(frame)[None, :]).astype(np.int64))
    frames = ctx.builder.op("gather", [signal, index], {"axis": 1}, hint=f"{name}.framed")
    if window:
        weights = operand(ctx, window, type_.dtype)
        weights = ctx.builder.op("reshape", [weights], {"shape": (1, 1, frame, 1)}, hint=f"{name}.window")
        frames = ctx.builder.op("mul", [frames, weights], hint=f"{name}.windowed")
    onesided = bool(attrs.get("onesided", 1)) and type_.shape[-1] == 1
    return [fourier(ctx.builder, frames, 2, frame, False, onesided, name)]


# --- windows and the mel filter bank (constants) -------------------------------------------
WINDOW_TERMS = {"HannWindow": (0.5, 0.5, 0.0), "HammingWindow": (25 / 46, 21 / 46, 0.0),
                "BlackmanWindow": (0.42, 0.5, 0.08)}
"""a0, a1, a2 of w[k] = a0 - a1 cos(2 pi k / N) + a2 cos(4 pi k / N)."""


def _scalar(ctx, node, index: int, what: str):
    return concrete(static_input(ctx, node, index, what), f"{node.op_type}'s {what}").reshape(-1)[0].item()


def _output_type(attrs, node) -> np.dtype:
    return onnx_dtype(int(attrs.get("output_datatype", 1)), f"{node.op_type}'s output_datatype").numpy


def convert_window(ctx, node, attrs):
    """A window of a size known while importing, evaluated then: N is the size (periodic,
    the default) or the size - 1 (symmetric)."""
    size = int(_scalar(ctx, node, 0, "size"))
    if size < 1:
        raise UnsupportedModel(f"{node.op_type} of size {size}", expected="a positive size")
    a0, a1, a2 = WINDOW_TERMS[node.op_type]
    span = size if attrs.get("periodic", 1) else size - 1
    angle = 2 * np.pi * np.arange(size) / max(span, 1)
    return [(a0 - a1 * np.cos(angle) + a2 * np.cos(2 * angle)).astype(_output_type(attrs, node))]


def convert_mel_weight_matrix(ctx, node, attrs):
    """The [dft_length // 2 + 1, num_mel_bins] triangular filters, evaluated while importing
    as ONNX's reference places them: num_mel_bins + 2 edges evenly spaced on the mel scale
    (2595 log10(1 + f / 700)), each turned into a spectrogram bin floor((dft_length + 1) f /
    sample_rate); filter i rises from edge i to edge i + 1 and falls to edge i + 2."""
    mel_bins, length, rate = (int(_scalar(ctx, node, index, what))
                              for index, what in enumerate(("num_mel_bins", "dft_length", "sample_rate")))
    low, high = (float(_scalar(ctx, node, index, what)) for index, what in ((3, "lower_edge_hertz"),
                                                                            (4, "upper_edge_hertz")))
    if mel_bins < 1 or length < 1 or rate < 1:
        raise UnsupportedModel(f"MelWeightMatrix of {mel_bins} bins for a DFT of {length} at {rate} Hz",
                               expected="positive counts and rate")
    low_mel, high_mel = (2595 * np.log10(1 + hertz / 700) for hertz in (low, high))
    mels = np.arange(mel_bins + 2) * ((high_mel - low_mel) / (mel_bins + 2)) + low_mel
    edges = (((length + 1) * (700 * (10 ** (mels / 2595) - 1))) // rate).astype(int)
    weights = np.zeros((length // 2 + 1, mel_bins))
    for index in range(mel_bins):
        left, center, right = edges[index:index + 3]
        if center == left:
            weights[center, index] = 1.0
        else:
            weights[left:center + 1, index] = (np.arange(left, center + 1) - left) / (center - left)
        if right > center:
            weights[center:right, index] = (right - np.arange(center, right)) / (right - center)
    return [weights.astype(_output_type(attrs, node))]


register({"DFT": convert_dft, "STFT": convert_stft, "HannWindow": convert_window, "HammingWindow": convert_window,
          "BlackmanWindow": convert_window, "MelWeightMatrix": convert_mel_weight_matrix})
