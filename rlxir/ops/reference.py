"""NumPy references: the semantics of every core and fused op, as the interpreter runs them.

Each reference is ``reference(inputs, attrs) -> numpy.ndarray``: `inputs` are the operand
arrays in operand order, `attrs` the op's full attribute dict (schema defaults filled; any
stage annotation such as ``kernel`` or ``view_of`` is present and ignored, so lowered
graphs run unchanged). References compute in the operands' NumPy dtype; the interpreter
converts each result to the node's dtype afterwards (`to_dtype`).

Choices this module fixes where IR.md leaves one open:

- **bf16** is held as float32 whose value is rounded to bf16 precision (round to nearest,
  ties to even, on the upper 16 bits of the float32 pattern; NaN stays NaN). Every value
  of a bf16 type is rounded when it is produced, so bf16 results carry bf16 precision.
- **f16 convolution** (``conv2d``) accumulates its sums in float32, as f16 convolution
  kernels do; the result is rounded to f16 when it is produced.
- **Integer arithmetic**: ``div`` truncates toward zero (as C and Rust kernels do) and
  ``pow`` is computed in float64 then converted back.
- **avg_pool2d** divides every window by the full kernel area, padded cells included
  (PyTorch's ``count_include_pad=True``); **max_pool2d** pads with -inf.
- **attention** ``softmax(q k^T * scale + mask) v`` with ``scale = 1/sqrt(D)`` (D = q's
  last dim) when absent. A bool mask keeps the positions where it is true (false ones get
  -inf); any other mask is added to the scores. ``causal`` keeps key ``j`` for query ``i``
  when ``j <= i`` (aligned at the top-left, as PyTorch's ``is_causal``).
- **selective_scan** (Mamba, zero initial state), for t = 0 .. S-1::

      dA[b,h,n]     = exp(delta[b,t,h] * A[h,n])
      state[b,h,n]  = dA[b,h,n] * state[b,h,n] + delta[b,t,h] * Bm[b,t,n] * x[b,t,h]
      y[b,t,h]      = sum_n state[b,h,n] * C[b,t,n]

- **cumsum** with ``exclusive`` sums the elements strictly before each position (the first
  is 0); **gather** with an index outside ``[0, dim)`` is an `RlxError`.
- **gelu** exact is ``0.5 x (1 + erf(x / sqrt 2))``; approximate is
  ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.
- **fused_elementwise** runs its chain's steps with these references, keeping
  intermediates at the operands' NumPy precision (a fused kernel rounds once, at the end).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rlxir.dtypes import DType
from rlxir.errors import RlxError
from rlxir.numpy_on_use import numpy_function, numpy_on_use
from rlxir.ops import special
from rlxir.ops.chain import parse_chain
from rlxir.ops.registry import attach_each, check_attributes, get_op

if TYPE_CHECKING:
    import numpy as np

    Arrays = Sequence[np.ndarray]
else:
    np = numpy_on_use(__name__)  # NumPy imported on first use (rlxir/numpy_on_use.py)

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
GELU_TANH_COEFFICIENT = 0.044715


# --- dtypes ----------------------------------------------------------------------------
def round_to_bf16(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bf16 (ties to even); NaN stays NaN."""
    values = np.asarray(values, dtype=np.float32)
    bits = values.view(np.uint32)
    tie_breaker = ((bits >> 16) & np.uint32(1)) + np.uint32(0x7FFF)
    rounded = ((bits + tie_breaker) & np.uint32(0xFFFF0000)).view(np.float32)
    return np.where(np.isnan(values), values, rounded)


def to_dtype(values, dtype: DType) -> np.ndarray:
    """`values` as the NumPy array that holds `dtype` (bf16: float32 at bf16 precision); a
    complex value cast to a real dtype keeps its real part."""
    values = np.asarray(values)
    if np.iscomplexobj(values) and not dtype.is_complex:
        values = values.real  # what astype does, without NumPy's ComplexWarning on stderr
    with np.errstate(all="ignore"):
        array = values.astype(dtype.numpy, copy=False)
    return round_to_bf16(array) if dtype is DType.bf16 else array


# --- elementwise -----------------------------------------------------------------------
def erf(x) -> np.ndarray:
    """The error function, computed in float64 (`rlxir.ops.special.erf`: the C library's
    algorithm, within an ulp of `math.erf`) and returned in x's dtype."""
    x = np.asarray(x)
    return special.erf(x).astype(x.dtype)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)), without overflow for large |x|."""
    return np.exp(-np.logaddexp(np.zeros((), x.dtype), -x))


def gelu(x: np.ndarray, approximate: bool) -> np.ndarray:
    if approximate:
        inner = x.dtype.type(SQRT_2_OVER_PI) * (x + x.dtype.type(GELU_TANH_COEFFICIENT) * x * x * x)
        return x.dtype.type(0.5) * x * (1 + np.tanh(inner))
    return x.dtype.type(0.5) * x * (1 + erf(x / x.dtype.type(math.sqrt(2.0))))


def _unary(function):
    def reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
        return function(inputs[0])

    return reference


UNARY_FUNCTIONS = {
    "neg": numpy_function("negative"),
    "abs": numpy_function("abs"),
    "exp": numpy_function("exp"),
    "log": numpy_function("log"),
    "sqrt": numpy_function("sqrt"),
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "tanh": numpy_function("tanh"),
    "sigmoid": sigmoid,
    "relu": lambda x: np.maximum(x, np.zeros((), x.dtype)),
    "silu": lambda x: x * sigmoid(x),
    "sin": numpy_function("sin"),
    "cos": numpy_function("cos"),
    "erf": erf,
}


def gelu_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    return gelu(inputs[0], attrs["approximate"])


def cast_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    return to_dtype(inputs[0], attrs["to"])


def divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """True division for floats; for integers, division truncated toward zero."""
    if np.issubdtype(a.dtype, np.integer):
        quotient = np.abs(a) // np.abs(b)
        return np.where((a < 0) != (b < 0), -quotient, quotient).astype(a.dtype)
    return a / b


def power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a ** b; integers go through float64 (NumPy refuses negative integer exponents)."""
    if np.issubdtype(a.dtype, np.integer):
        return np.power(a.astype(np.float64), b.astype(np.float64))
    return np.power(a, b)


def _binary(function):
    def reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
        return function(inputs[0], inputs[1])

    return reference


BINARY_FUNCTIONS = {
    "add": numpy_function("add"), "sub": numpy_function("subtract"), "mul": numpy_function("multiply"),
    "div": divide, "pow": power, "maximum": numpy_function("maximum"), "minimum": numpy_function("minimum"),
    "eq": numpy_function("equal"), "ne": numpy_function("not_equal"), "lt": numpy_function("less"),
    "le": numpy_function("less_equal"), "gt": numpy_function("greater"), "ge": numpy_function("greater_equal"),
}


def where_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    condition, a, b = inputs
    return np.where(condition, a, b)


# --- reductions and scans --------------------------------------------------------------
def _accumulator(x: np.ndarray):
    """The dtype to sum in: the operand's own, except bool (summed as int64)."""
    return np.int64 if x.dtype == np.bool_ else x.dtype


def _reduce(function, accumulate: bool):
    def reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
        x = inputs[0]
        axes = tuple(attrs["axes"])
        if accumulate:
            return function(x, axis=axes, keepdims=attrs["keepdims"], dtype=_accumulator(x))
        return function(x, axis=axes, keepdims=attrs["keepdims"])

    return reference


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return shifted / np.sum(shifted, axis=axis, keepdims=True)


def softmax_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    return softmax(inputs[0], attrs["axis"])


def cumsum_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    x, axis = inputs[0], attrs["axis"]
    total = np.cumsum(x, axis=axis, dtype=_accumulator(x))
    if not attrs["exclusive"] or x.shape[axis] == 0:
        return total
    # Shift by one along the axis: position i holds the sum of positions < i.
    zero_shape = list(x.shape)
    zero_shape[axis] = 1
    zeros = np.zeros(zero_shape, total.dtype)
    kept = np.take(total, np.arange(x.shape[axis] - 1), axis=axis)
    return np.concatenate([zeros, kept], axis=axis)


# --- linear algebra and norms ----------------------------------------------------------
def matmul(a: np.ndarray, b: np.ndarray, transpose_a: bool = False, transpose_b: bool = False) -> np.ndarray:
    """`matmul` as its shape rule reads it: a rank-1 a is [1, K], a rank-1 b is [K, 1]
    (transposes apply after that), and the added unit dims are dropped from the result."""
    squeeze_front, squeeze_back = a.ndim == 1, b.ndim == 1
    a = a[np.newaxis, :] if squeeze_front else a
    b = b[:, np.newaxis] if squeeze_back else b
    a = np.swapaxes(a, -1, -2) if transpose_a else a
    b = np.swapaxes(b, -1, -2) if transpose_b else b
    result = np.matmul(a, b)
    if squeeze_back:
        result = result[..., 0]
    if squeeze_front:
        result = result[..., 0] if squeeze_back else result[..., 0, :]
    return result


def matmul_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    return matmul(inputs[0], inputs[1], attrs["transpose_a"], attrs["transpose_b"])


def linear_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    result = matmul(inputs[0], inputs[1])
    return result + inputs[2] if len(inputs) == 3 else result


def layernorm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, axis: int, eps: float) -> np.ndarray:
    """Normalise over the axes from `axis` to the last (population variance)."""
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = np.mean(x, axis=axes, keepdims=True)
    variance = np.mean((x - mean) ** 2, axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(variance + x.dtype.type(eps)) * gamma + beta


def rmsnorm(x: np.ndarray, gamma: np.ndarray, axis: int, eps: float) -> np.ndarray:
    """x / sqrt(mean(x^2) + eps) * gamma over the axes from `axis` to the last."""
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean_square = np.mean(x * x, axis=axes, keepdims=True)
    return x / np.sqrt(mean_square + x.dtype.type(eps)) * gamma


def layernorm_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    x, gamma, beta = inputs
    return layernorm(x, gamma, beta, attrs["axis"], attrs["eps"])


def rmsnorm_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    x, gamma = inputs
    return rmsnorm(x, gamma, attrs["axis"], attrs["eps"])


def batchnorm_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    """Inference batchnorm over axis 1: (x - mean) / sqrt(var + eps) * scale + bias."""
    x, scale, bias, mean, variance = inputs
    per_channel = (1, x.shape[1]) + (1,) * (x.ndim - 2)

    def channel(values):
        return values.reshape(per_channel)

    normalized = (x - channel(mean)) / np.sqrt(channel(variance) + x.dtype.type(attrs["eps"]))
    return normalized * channel(scale) + channel(bias)


def fused_residual_layernorm_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    x, residual, gamma, beta = inputs
    return layernorm(x + residual, gamma, beta, -1, attrs["eps"])


def fused_residual_rmsnorm_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    x, residual, gamma = inputs
    return rmsnorm(x + residual, gamma, -1, attrs["eps"])


ACTIVATIONS = {
    "none": lambda x: x,
    "gelu": lambda x: gelu(x, approximate=False),
    "silu": UNARY_FUNCTIONS["silu"],
}


def fused_matmul_bias_act_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    x, w, bias = inputs
    return ACTIVATIONS[attrs["activation"]](matmul(x, w) + bias)


# --- attention and sequences -----------------------------------------------------------
def attention_scale(attrs: Mapping, head_dim: int) -> float:
    """The `scale` attribute, or 1/sqrt(D) when it is absent."""
    scale = attrs.get("scale")
    return 1.0 / math.sqrt(head_dim) if scale is None else scale


def causal_keep(queries: int, keys: int) -> np.ndarray:
    """[queries, keys] bool: key j is visible to query i when j <= i."""
    return np.arange(keys)[np.newaxis, :] <= np.arange(queries)[:, np.newaxis]


def attention_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    q, k, v = inputs[:3]
    scores = matmul(q, k, transpose_b=True) * q.dtype.type(attention_scale(attrs, q.shape[-1]))
    minus_infinity = q.dtype.type(-np.inf)
    if len(inputs) == 4:
        mask = inputs[3]
        scores = np.where(mask, scores, minus_infinity) if mask.dtype == np.bool_ else scores + mask
    if attrs["causal"]:
        scores = np.where(causal_keep(q.shape[-2], k.shape[-2]), scores, minus_infinity)
    return matmul(softmax(scores, -1), v)


def selective_scan(x, delta, a, bm, c) -> np.ndarray:
    """Mamba's selective scan (see the module docstring), one time step at a time."""
    batch, steps, hidden = x.shape
    state = np.zeros((batch, hidden, a.shape[1]), x.dtype)
    outputs = np.empty_like(x)
    for t in range(steps):
        step_delta = delta[:, t, :, np.newaxis]  # [B, H, 1]
        decay = np.exp(step_delta * a)  # [B, H, N]
        state = decay * state + step_delta * x[:, t, :, np.newaxis] * bm[:, t, np.newaxis, :]
        outputs[:, t, :] = np.sum(state * c[:, t, np.newaxis, :], axis=-1)
    return outputs


def selective_scan_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    return selective_scan(*inputs)


# --- shape ops -------------------------------------------------------------------------
def reshape_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    return np.reshape(inputs[0], tuple(attrs["shape"]))


def transpose_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    return np.transpose(inputs[0], tuple(attrs["perm"]))


def expand_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    return np.broadcast_to(inputs[0], tuple(attrs["shape"])).copy()


def concat_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    return np.concatenate(list(inputs), axis=attrs["axis"])


def slice_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    x = inputs[0]
    index = [slice(None)] * x.ndim
    index[attrs["axis"]] = slice(attrs["start"], attrs["start"] + attrs["len"])
    return x[tuple(index)]


def check_gather_indices(indices, size: int, op: str = "gather") -> None:
    """Raise `RlxError` naming the first bound crossed when an index is outside [0, size)
    (NumPy or CuPy `indices`: one min and one max, no copy)."""
    if not indices.size:
        return
    low, high = int(indices.min()), int(indices.max())
    if low < 0 or high >= size:
        raise RlxError(f"{op} index {low if low < 0 else high} is out of range for a table dim of {size}",
                       expected=f"indices in [0, {size})")


def gather_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    table, indices = inputs
    axis = attrs["axis"]
    check_gather_indices(indices, table.shape[axis])
    return np.take(table, indices, axis=axis)


# --- convolution and pooling -----------------------------------------------------------
def _window_count(size: int, kernel: int, stride: int, dilation: int = 1) -> int:
    return (size - dilation * (kernel - 1) - 1) // stride + 1


def _window(padded: np.ndarray, row: int, col: int, rows: int, cols: int, stride, dilation=(1, 1)) -> np.ndarray:
    """The [..., rows, cols] grid of elements that kernel tap (row, col) reads."""
    top, left = row * dilation[0], col * dilation[1]
    return padded[..., top:top + stride[0] * (rows - 1) + 1:stride[0], left:left + stride[1] * (cols - 1) + 1:stride[1]]


def _pad(x: np.ndarray, padding, value) -> np.ndarray:
    top, left, bottom, right = padding
    return np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=value)


def conv2d(x, w, bias, stride, padding, dilation, groups) -> np.ndarray:
    """NCHW input, OIHW weight (I = C / groups); one einsum per kernel tap."""
    padded = _pad(x, padding, 0)
    batch, channels, height, width = padded.shape
    out_channels, group_channels, kernel_h, kernel_w = w.shape
    rows = _window_count(height, kernel_h, stride[0], dilation[0])
    cols = _window_count(width, kernel_w, stride[1], dilation[1])
    grouped_x = padded.reshape(batch, groups, group_channels, height, width)
    grouped_w = w.reshape(groups, out_channels // groups, group_channels, kernel_h, kernel_w)
    # f16 sums accumulate in float32 (as f16 convolution kernels and ONNX's reference do);
    # the interpreter rounds the result to f16 afterwards
    accumulate = np.float32 if np.result_type(x, w) == np.float16 else np.result_type(x, w)
    result = np.zeros((batch, groups, out_channels // groups, rows, cols), accumulate)
    for row in range(kernel_h):
        for col in range(kernel_w):
            taps = _window(grouped_x, row, col, rows, cols, stride, dilation)
            result += np.einsum("bgchw,goc->bgohw", taps, grouped_w[..., row, col], dtype=accumulate)
    result = result.reshape(batch, out_channels, rows, cols)
    return result if bias is None else result + bias.reshape(1, -1, 1, 1)


def conv2d_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    bias = inputs[2] if len(inputs) == 3 else None
    return conv2d(inputs[0], inputs[1], bias, attrs["stride"], attrs["padding"], attrs["dilation"], attrs["groups"])


def _pool(x: np.ndarray, attrs: Mapping, fill, combine) -> np.ndarray:
    kernel = attrs["kernel"]
    stride = attrs["stride"] or kernel
    padded = _pad(x, attrs["padding"], fill)
    rows = _window_count(padded.shape[2], kernel[0], stride[0])
    cols = _window_count(padded.shape[3], kernel[1], stride[1])
    result = None
    for row in range(kernel[0]):
        for col in range(kernel[1]):
            taps = _window(padded, row, col, rows, cols, stride)
            result = taps.copy() if result is None else combine(result, taps)
    return result


def max_pool2d_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    x = inputs[0]
    lowest = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    return _pool(x, attrs, lowest, np.maximum)


def avg_pool2d_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    """Window sums divided by the full kernel area, padded cells included."""
    total = _pool(inputs[0], attrs, 0, np.add)
    kernel = attrs["kernel"]
    return total / inputs[0].dtype.type(kernel[0] * kernel[1])


# --- fused regions ---------------------------------------------------------------------
def fused_elementwise_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    """Run the region's chain: each step's reference on operands ($i) and earlier steps (%j)."""
    results: list[np.ndarray] = []
    for step in parse_chain(attrs["chain"]):
        opdef = get_op(step.op)
        arguments = [inputs[ref] if kind == "$" else results[ref] for kind, ref in step.args]
        _, step_attrs = check_attributes(opdef, dict(step.attrs))
        results.append(np.asarray(opdef.reference(arguments, step_attrs)))
    return results[-1]


# --- registration ----------------------------------------------------------------------
REFERENCES = {
    **{name: _unary(function) for name, function in UNARY_FUNCTIONS.items()},
    **{name: _binary(function) for name, function in BINARY_FUNCTIONS.items()},
    "gelu": gelu_reference,
    "cast": cast_reference,
    "where": where_reference,
    "reduce_sum": _reduce(numpy_function("sum"), accumulate=True),
    "reduce_mean": _reduce(numpy_function("mean"), accumulate=True),
    "reduce_max": _reduce(numpy_function("max"), accumulate=False),
    "reduce_min": _reduce(numpy_function("min"), accumulate=False),
    "softmax": softmax_reference,
    "cumsum": cumsum_reference,
    "matmul": matmul_reference,
    "linear": linear_reference,
    "layernorm": layernorm_reference,
    "rmsnorm": rmsnorm_reference,
    "batchnorm": batchnorm_reference,
    "attention": attention_reference,
    "selective_scan": selective_scan_reference,
    "reshape": reshape_reference,
    "transpose": transpose_reference,
    "expand": expand_reference,
    "concat": concat_reference,
    "slice": slice_reference,
    "gather": gather_reference,
    "conv2d": conv2d_reference,
    "max_pool2d": max_pool2d_reference,
    "avg_pool2d": avg_pool2d_reference,
    "fused_matmul_bias_act": fused_matmul_bias_act_reference,
    "fused_residual_layernorm": fused_residual_layernorm_reference,
    "fused_residual_rmsnorm": fused_residual_rmsnorm_reference,
    "fused_elementwise": fused_elementwise_reference,
}

attach_each("reference", REFERENCES)
