"""PyTorch's FFT primitives -> core ops: ``_fft_r2c``, ``_fft_c2c`` and ``_fft_c2r``, which
Core ATen lowers every ``torch.fft`` function (fft, rfft, ihfft, their 2-d and n-d forms,
``stft``) to.

Complex values are real pairs [..., 2] (`rlxir.importers.torch_complex`). Each transformed
dim is a ``matmul`` by cos/sin matrices (`rlxir.importers.fourier`), one dim after the
other (the n-d transform is separable), computed in f64 and rounded to float32 once at the
end, so the result does not drift from PyTorch's FFT by the length of the sums. The
normalization PyTorch passes (0: none, 1: 1 / sqrt(n), 2: 1 / n, n the signal length of
each dim) scales each dim's matrices. A transformed dim must be static; a transform whose
matrices would exceed `MATRIX_LIMIT` elements is refused rather than unrolled.
"""

from __future__ import annotations

import math

from rlxir.dtypes import DType
from rlxir.importers.fourier import fourier
from rlxir.importers.torch_complex import carried, pair_of
from rlxir.importers.torch_ops import op, operand, refuse, reshape, shape_of
from rlxir.importers.torch_registry import converter
from rlxir.ops import normalize_axis

NORMALIZATIONS = {0: lambda n: 1.0, 1: lambda n: 1.0 / math.sqrt(n), 2: lambda n: 1.0 / n}
"""PyTorch's fft_norm_mode (none, by_root_n, by_n) -> the scale of a dim of n points."""


def _scale(normalization: int, n: int) -> float:
    if normalization not in NORMALIZATIONS:
        refuse(f"FFT normalization {normalization!r}", "0 (none), 1 (1/sqrt(n)) or 2 (1/n)")
    return NORMALIZATIONS[normalization](n)


def _length(ctx, value: str, axis: int) -> int:
    size = shape_of(ctx, value)[axis]
    if not isinstance(size, int):
        refuse(f"an FFT along the symbolic dim {size}", "a static signal dim")
    return size


def _dims(dims, rank: int) -> list[int]:
    axes = [normalize_axis(axis, rank) for axis in dims]
    if not axes:
        refuse("an FFT over no dim", "at least one dim")
    return axes


def _complex_transforms(ctx, pair: str, axes, inverse: bool, normalization: int, name: str) -> str:
    """c2c along each of `axes` of a pair (f64)."""
    for axis in axes:
        n = _length(ctx, pair, axis)
        pair = fourier(ctx.builder, pair, axis, n, inverse, False, f"{name}.d{axis}", _scale(normalization, n))
    return pair


def _to_f32(ctx, value: str, name: str) -> str:
    return op(ctx, "cast", [value], {"to": DType.f32}, hint=name)


@converter("aten._fft_r2c")
def handle_fft_r2c(ctx, node, args, kwargs):
    """_fft_r2c(x, dim, normalization, onesided): the forward transform of a real signal
    over `dim`, the last of them kept to its n // 2 + 1 first frequencies when onesided."""
    dims, normalization, onesided = args[1], args[2], args[3]
    x = operand(ctx, args[0], DType.f64, f"{node.name}.f64")
    rank = len(shape_of(ctx, x))
    axes = _dims(dims, rank)
    signal = reshape(ctx, x, shape_of(ctx, x) + (1,), f"{node.name}.signal")
    last = axes[-1]
    n = _length(ctx, signal, last)
    pair = fourier(ctx.builder, signal, last, n, False, bool(onesided), f"{node.name}.d{last}",
                   _scale(normalization, n))
    pair = _complex_transforms(ctx, pair, axes[:-1], False, normalization, node.name)
    return carried(ctx, node, _to_f32(ctx, pair, node.name))


@converter("aten._fft_c2c")
def handle_fft_c2c(ctx, node, args, kwargs):
    """_fft_c2c(x, dim, normalization, forward): the transform of a complex signal over `dim`."""
    dims, normalization, forward = args[1], args[2], args[3]
    pair = operand(ctx, pair_of(ctx, node.args[0], node.name), DType.f64, f"{node.name}.f64")
    axes = _dims(dims, len(shape_of(ctx, pair)) - 1)
    pair = _complex_transforms(ctx, pair, axes, not forward, normalization, node.name)
    return carried(ctx, node, _to_f32(ctx, pair, node.name))


@converter("aten._fft_c2r")
def handle_fft_c2r(ctx, node, args, kwargs):
    """_fft_c2r(x, dim, normalization, last_dim_size): the inverse transform over `dim` of
    a spectrum Hermitian in the last of them, whose real signal has `last_dim_size` points
    there (the frequencies past last_dim_size // 2 and the imaginary parts of the first and
    the Nyquist one are not read, as PyTorch's FFT does not read them)."""
    dims, normalization, last_size = args[1], args[2], args[3]
    if not isinstance(last_size, int) or last_size < 1:
        refuse(f"an inverse real FFT of {last_size} points", "a static, positive last_dim_size")
    pair = operand(ctx, pair_of(ctx, node.args[0], node.name), DType.f64, f"{node.name}.f64")
    axes = _dims(dims, len(shape_of(ctx, pair)) - 1)
    pair = _complex_transforms(ctx, pair, axes[:-1], True, normalization, node.name)
    last = axes[-1]
    signal = fourier(ctx.builder, pair, last, last_size, True, True, f"{node.name}.d{last}",
                     _scale(normalization, last_size))
    real = reshape(ctx, signal, shape_of(ctx, signal)[:-1], f"{node.name}.real")
    return _to_f32(ctx, real, node.name)
