"""Kernels that write into their planned slot, for any array module.

A kernel is ``kernel(xp, args, attrs, out, workspace) -> array``: `xp` is the array module
(NumPy, or CuPy on a GPU), `args` the operands as the interpreter holds them, `attrs` the
node's full attributes, `out` the result's slot (or None: allocate) and `workspace` the
node's planned scratch bytes (a uint8 array, or None). It computes what the op's NumPy
reference computes (`rlxir.ops.reference`), in the same order of operations, and returns
`out`. The same code runs on both modules: nothing here names NumPy's functions except to
read dtypes.

An op without a kernel here runs its NumPy reference on the host and the result is copied
into its slot (`run_reference`); the executor counts those calls and, on the CPU, the
temporary they hold is part of the measured memory outside the arena.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from rlxir.dtypes import DType
from rlxir.executor.grad_kernels import GRAD_KERNELS
from rlxir.executor.spatial import SPATIAL_KERNELS
from rlxir.executor.tiling import in_place_by_tiles, operand_tile
from rlxir.ops.chain import parse_chain
from rlxir.ops.reference import (GELU_TANH_COEFFICIENT, SQRT_2_OVER_PI, attention_scale, check_gather_indices, erf,
                                 round_to_bf16, to_dtype)
from rlxir.ops.registry import check_attributes, get_op

Kernel = Callable
ERF_CHUNK = 16384
"""Elements erf takes at a time: it holds a few float64 temporaries of that size."""
ATTENTION_TILE = 1 << 22


def _is_float(array) -> bool:
    return np.issubdtype(array.dtype, np.floating)


def _scalar(array, value):
    return array.dtype.type(value)


def special_erf(xp, x, out=None):
    """erf on either module: CuPy's special function, or the reference's exact erf."""
    if xp is np:
        # the reference's float64 erf, a chunk at a time: its temporaries stay small
        out = np.empty_like(x) if out is None else out
        flat_in, flat_out = x.reshape(-1), out.reshape(-1)
        for start in range(0, flat_in.size, ERF_CHUNK):
            flat_out[start:start + ERF_CHUNK] = erf(flat_in[start:start + ERF_CHUNK])
        return out
    from cupyx.scipy.special import erf as device_erf

    return device_erf(x, out=out) if out is not None else device_erf(x)


# --- elementwise -----------------------------------------------------------------------
def _ufunc(name: str) -> Kernel:
    def kernel(xp, args, attrs, out, workspace=None):
        return getattr(xp, name)(*args, out=out)

    return kernel


def _sigmoid_into(xp, x, out):
    # exp(-logaddexp(0, -x)), as the reference: no overflow for large |x|
    out = xp.asarray(xp.negative(x, out=out))  # asarray: a 0-d result is a scalar, unfit for out=
    out = xp.logaddexp(_scalar(x, 0), out, out=out)
    out = xp.negative(out, out=out)
    return xp.exp(out, out=out)


def _sigmoid(xp, args, attrs, out, workspace=None):
    return _sigmoid_into(xp, args[0], out)


def _silu(xp, args, attrs, out, workspace=None):
    x = args[0]
    out = _sigmoid_into(xp, x, out)
    return xp.multiply(x, out, out=out)


def _relu(xp, args, attrs, out, workspace=None):
    return xp.maximum(args[0], _scalar(args[0], 0), out=out)


def _rsqrt(xp, args, attrs, out, workspace=None):
    out = xp.asarray(xp.sqrt(args[0], out=out))
    return xp.divide(_scalar(out, 1), out, out=out)


def gelu_into(xp, x, out, approximate: bool):
    """0.5 x (1 + tanh(...)) or 0.5 x (1 + erf(x / sqrt 2)), in the reference's order."""
    if approximate:
        cubic = xp.asarray(x * x * x)  # a 0-d operation gives a scalar; out= needs an array
        inner = xp.multiply(_scalar(x, GELU_TANH_COEFFICIENT), cubic, out=cubic)
        inner = xp.add(x, inner, out=inner)
        inner = xp.multiply(_scalar(x, SQRT_2_OVER_PI), inner, out=inner)
        curve = xp.tanh(inner, out=inner)
    else:
        scaled = xp.asarray(xp.divide(x, _scalar(x, math.sqrt(2.0))))
        curve = special_erf(xp, scaled, out=scaled)
    curve = xp.add(_scalar(x, 1), curve, out=curve)
    out = xp.asarray(xp.multiply(_scalar(x, 0.5), x, out=out))
    return xp.multiply(out, curve, out=out)


def _gelu(xp, args, attrs, out, workspace=None):
    return gelu_into(xp, args[0], out, attrs["approximate"])


def _erf(xp, args, attrs, out, workspace=None):
    return special_erf(xp, args[0], out=out)


def _float_only(name: str) -> Kernel:
    """A ufunc whose integer form the reference defines differently (div, pow)."""
    def kernel(xp, args, attrs, out, workspace=None):
        if not _is_float(args[0]):
            return None
        return getattr(xp, name)(*args, out=out)

    return kernel


def _where(xp, args, attrs, out, workspace=None):
    condition, a, b = args
    if out is None:
        return xp.where(condition, a, b)
    xp.copyto(out, b)
    xp.copyto(out, a, where=xp.broadcast_to(condition, out.shape))
    return out


def _cast(xp, args, attrs, out, workspace=None):
    if attrs["to"] is DType.bf16:
        return None
    source = args[0]
    if xp.iscomplexobj(source) and not attrs["to"].is_complex:
        source = source.real  # the reference's real part, without NumPy's ComplexWarning on stderr
    if out is None:
        return source.astype(attrs["to"].numpy)
    xp.copyto(out, source, casting="unsafe")
    return out


# --- reductions, softmax, norms --------------------------------------------------------
def _reduce(name: str, accumulate: bool) -> Kernel:
    def kernel(xp, args, attrs, out, workspace=None):
        x = args[0]
        options = {"axis": tuple(attrs["axes"]), "keepdims": attrs["keepdims"]}
        if accumulate:
            accumulator = np.int64 if x.dtype == np.bool_ else x.dtype
            if out is not None and out.dtype != accumulator:
                return None
            options["dtype"] = accumulator
        return getattr(xp, name)(x, out=out, **options)

    return kernel


def _softmax(xp, args, attrs, out, workspace=None):
    x, axis = args[0], attrs["axis"]
    out = xp.asarray(xp.subtract(x, xp.max(x, axis=axis, keepdims=True), out=out))
    out = xp.exp(out, out=out)
    return xp.divide(out, xp.sum(out, axis=axis, keepdims=True), out=out)


def _normalize_into(xp, out, axes, eps, centre: bool):
    """Layer- or RMS-normalise `out` in place over `axes` (the reference's order)."""
    if centre:
        out = xp.subtract(out, xp.mean(out, axis=axes, keepdims=True), out=out)
    second_moment = xp.asarray(xp.mean(out * out, axis=axes, keepdims=True))
    second_moment = xp.add(second_moment, _scalar(out, eps), out=second_moment)
    return xp.divide(out, xp.sqrt(second_moment, out=second_moment), out=out)


def _norm_axes(x, axis):
    return tuple(range(axis % x.ndim, x.ndim))


def _start(xp, source, out):
    if out is None:
        return source.copy()
    xp.copyto(out, source)
    return out


def _layernorm(xp, args, attrs, out, workspace=None):
    x, gamma, beta = args
    out = _normalize_into(xp, _start(xp, x, out), _norm_axes(x, attrs["axis"]), attrs["eps"], centre=True)
    out = xp.multiply(out, gamma, out=out)
    return xp.add(out, beta, out=out)


def _rmsnorm(xp, args, attrs, out, workspace=None):
    x, gamma = args
    out = _normalize_into(xp, _start(xp, x, out), _norm_axes(x, attrs["axis"]), attrs["eps"], centre=False)
    return xp.multiply(out, gamma, out=out)


def _residual_norm(centre: bool) -> Kernel:
    def kernel(xp, args, attrs, out, workspace=None):
        x, residual, gamma = args[:3]
        out = xp.asarray(xp.add(x, residual, out=out))
        out = _normalize_into(xp, out, (out.ndim - 1,), attrs["eps"], centre)
        out = xp.multiply(out, gamma, out=out)
        return xp.add(out, args[3], out=out) if centre else out

    return kernel


# --- linear algebra --------------------------------------------------------------------
def matmul_into(xp, a, b, out, transpose_a=False, transpose_b=False):
    if a.ndim == 1 or b.ndim == 1:
        return None  # the reference's unit-dim rules; rare, left to it
    a = xp.swapaxes(a, -1, -2) if transpose_a else a
    b = xp.swapaxes(b, -1, -2) if transpose_b else b
    if b.ndim == 2 and a.ndim > 2 and a.flags.c_contiguous and out is not None and out.flags.c_contiguous:
        # [..., M, K] x [K, N] as one [M', K] x [K, N] GEMM: a batched call with a broadcast,
        # transposed weight would copy the weight
        xp.matmul(a.reshape(-1, a.shape[-1]), b, out=out.reshape(-1, out.shape[-1]))
        return out
    return xp.matmul(a, b, out=out)


def _matmul(xp, args, attrs, out, workspace=None):
    return matmul_into(xp, args[0], args[1], out, attrs["transpose_a"], attrs["transpose_b"])


def _linear(xp, args, attrs, out, workspace=None):
    out = matmul_into(xp, args[0], args[1], out)
    if out is not None and len(args) == 3:
        out = xp.add(out, args[2], out=out)
    return out


def _fused_matmul_bias_act(xp, args, attrs, out, workspace=None):
    x, w, bias = args
    out = matmul_into(xp, x, w, out)
    if out is None:
        return None
    out = xp.add(out, bias, out=out)
    activation = attrs["activation"]
    if activation == "gelu":  # in place is safe: gelu reads x before it writes the result
        in_place_by_tiles(xp, out, lambda tile: gelu_into(xp, tile, tile, approximate=False))
    elif activation == "silu":  # silu reads x after writing the sigmoid: a copy of the tile
        in_place_by_tiles(xp, out, lambda tile: _silu(xp, [tile.copy()], {}, tile))
    return out


def _attention(xp, args, attrs, out, workspace=None):
    """softmax(q k^T * scale + mask) v, one batch entry and one block of query rows at a time,
    so the scores never exceed ATTENTION_TILE elements (the plan sizes no S x S matrix); each
    row's max and sum go to the planned workspace (two float32 values a row) when there is one."""
    q, k, v = args[:3]
    if q.ndim != 4 or not _is_float(q):
        return None
    batch, heads, queries, _ = q.shape
    keys = k.shape[-2]
    if out is None:
        out = xp.empty(q.shape[:-1] + (v.shape[-1],), q.dtype)
    rows = batch * heads * queries
    stats = None
    if workspace is not None and workspace.nbytes >= 2 * 4 * rows:
        stats = workspace[: 2 * 4 * rows].view(np.float32).reshape(2, batch, heads, queries, 1)
    block = max(1, min(queries, ATTENTION_TILE // max(1, heads * keys)))
    scale = _scalar(q, attention_scale(attrs, q.shape[-1]))
    for entry in range(batch):
        for first in range(0, queries, block):
            last = min(queries, first + block)
            index = (entry, slice(None), slice(first, last))
            scores = xp.matmul(q[index], xp.swapaxes(k[entry], -1, -2))
            scores = xp.multiply(scores, scale, out=scores)
            scores = _masked(xp, scores, args, attrs, index, first, last, keys)
            row_max = xp.max(scores, axis=-1, keepdims=True)
            scores = xp.subtract(scores, row_max, out=scores)
            scores = xp.exp(scores, out=scores)
            row_sum = xp.sum(scores, axis=-1, keepdims=True)
            if stats is not None:
                xp.copyto(stats[0][index], row_max, casting="same_kind")
                xp.copyto(stats[1][index], row_sum, casting="same_kind")
            scores = xp.divide(scores, row_sum, out=scores)
            xp.copyto(out[index], xp.matmul(scores, v[entry]))
    return out


def _masked(xp, scores, args, attrs, index, first: int, last: int, keys: int):
    """The block's scores with the mask (bool: keep where true; else added) and causality."""
    minus_infinity = _scalar(scores, -np.inf)
    if len(args) == 4:
        mask = operand_tile(args[3], index, 4)
        if mask.dtype == np.bool_:
            scores = xp.where(mask, scores, minus_infinity)
        else:
            scores = xp.add(scores, mask, out=scores)
    if attrs["causal"]:
        keep = xp.arange(keys)[None, :] <= xp.arange(first, last)[:, None]
        scores = xp.where(keep, scores, minus_infinity)
    return scores


# --- layout ----------------------------------------------------------------------------
def _copy_of(make_view) -> Kernel:
    def kernel(xp, args, attrs, out, workspace=None):
        view = make_view(xp, args, attrs)
        if out is None:
            return view.copy()
        xp.copyto(out, view)
        return out

    return kernel


def _slice_view(xp, args, attrs):
    x = args[0]
    index = [slice(None)] * x.ndim
    index[attrs["axis"]] = slice(attrs["start"], attrs["start"] + attrs["len"])
    return x[tuple(index)]


def _concat(xp, args, attrs, out, workspace=None):
    return xp.concatenate(list(args), axis=attrs["axis"], out=out)


def _gather(xp, args, attrs, out, workspace=None):
    table, indices = args
    axis = attrs["axis"]
    check_gather_indices(indices, table.shape[axis])
    return xp.take(table, indices, axis=axis, out=out)


def _gather_grad(xp, args, attrs, out, workspace=None):
    """The zero table with each row of the gradient added at its index, in the slot."""
    grad, indices = args
    if out is None:
        return None
    shape = out.shape
    axis = attrs["axis"] % len(shape)
    check_gather_indices(indices, shape[axis], "gather_grad")
    out.fill(0)
    rows = grad.reshape(tuple(shape[:axis]) + (indices.size,) + tuple(shape[axis + 1:]))
    where = (slice(None),) * axis + (indices.reshape(-1),)
    if xp is np:
        np.add.at(out, where, rows)
    else:
        import cupyx

        cupyx.scatter_add(out, where, rows)
    return out


# --- fused regions ---------------------------------------------------------------------
def _fused_elementwise(xp, args, attrs, out, workspace=None):
    """The region's chain step by step (the runner streams it over tiles, `tiling`): each
    intermediate exists for one tile only, as a fused kernel keeps it in registers; the last
    step writes the slot."""
    return _run_chain(xp, parse_chain(attrs["chain"]), args, out)


def _run_chain(xp, steps, args, out):
    results: list = []
    for number, step in enumerate(steps):
        kernel = KERNELS.get(step.op)
        arguments = [args[ref] if kind == "$" else results[ref] for kind, ref in step.args]
        _, step_attrs = check_attributes(get_op(step.op), dict(step.attrs))
        result = kernel(xp, arguments, step_attrs, None, None) if kernel else None
        if result is None:
            return None
        if number == len(steps) - 1 and out is not None:
            if result.dtype != out.dtype:
                return None
            xp.copyto(out, result)
            result = out
        results.append(result)
    return results[-1]


KERNELS: dict[str, Kernel] = {
    **{name: _ufunc(name) for name in ("negative", "absolute", "exp", "log", "sqrt", "tanh", "sin", "cos",
                                       "floor", "ceil")},
    "neg": _ufunc("negative"), "abs": _ufunc("absolute"),
    "sigmoid": _sigmoid, "silu": _silu, "relu": _relu, "rsqrt": _rsqrt, "gelu": _gelu, "erf": _erf,
    "add": _ufunc("add"), "sub": _ufunc("subtract"), "mul": _ufunc("multiply"),
    "maximum": _ufunc("maximum"), "minimum": _ufunc("minimum"),
    "div": _float_only("divide"), "pow": _float_only("power"),
    "eq": _ufunc("equal"), "ne": _ufunc("not_equal"), "lt": _ufunc("less"), "le": _ufunc("less_equal"),
    "gt": _ufunc("greater"), "ge": _ufunc("greater_equal"),
    "where": _where, "cast": _cast,
    "reduce_sum": _reduce("sum", True), "reduce_mean": _reduce("mean", True),
    "reduce_max": _reduce("max", False), "reduce_min": _reduce("min", False),
    "softmax": _softmax, "layernorm": _layernorm, "rmsnorm": _rmsnorm,
    "fused_residual_layernorm": _residual_norm(centre=True), "fused_residual_rmsnorm": _residual_norm(centre=False),
    "matmul": _matmul, "linear": _linear, "fused_matmul_bias_act": _fused_matmul_bias_act, "attention": _attention,
    "transpose": _copy_of(lambda xp, args, attrs: xp.transpose(args[0], tuple(attrs["perm"]))),
    "expand": _copy_of(lambda xp, args, attrs: xp.broadcast_to(args[0], tuple(attrs["shape"]))),
    "slice": _copy_of(_slice_view),
    "reshape": _copy_of(lambda xp, args, attrs: xp.reshape(args[0], tuple(attrs["shape"]))),
    "concat": _concat, "gather": _gather, "gather_grad": _gather_grad, "fused_elementwise": _fused_elementwise,
    **SPATIAL_KERNELS, **GRAD_KERNELS,
}
"""Ops with a kernel here. A kernel returns None where it leaves a case to the reference."""


def run_reference(xp, opdef, args, attrs, dtype: DType):
    """The op's NumPy reference on host copies of `args`, as the node's dtype (a host array)."""
    host = [arg if xp is np else xp.asnumpy(arg) for arg in args]
    return to_dtype(opdef.reference(host, attrs), dtype)


def finish_dtype(xp, out, dtype: DType):
    """Round a bf16 result held as float32 to bf16 precision, in place, and return it; a NumPy
    scalar (a reduction over every axis gives one) cannot change in place, so it comes back
    as a 0-d array."""
    if dtype is DType.bf16:
        if xp is np:
            out = np.asarray(out)
            out[...] = round_to_bf16(out)
        else:
            bits = out.view(np.uint32)
            tie = ((bits >> 16) & np.uint32(1)) + np.uint32(0x7FFF)
            rounded = ((bits + tie) & np.uint32(0xFFFF0000)).view(np.float32)
            xp.copyto(out, xp.where(xp.isnan(out), out, rounded))
    return out
