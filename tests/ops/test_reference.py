"""Each op's NumPy reference against a hand-computed or independent formulation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from rlxir.dtypes import DType
from rlxir.errors import RlxError
from rlxir.ops import check_attributes, get_op, registered_ops
from rlxir.ops.reference import round_to_bf16, to_dtype

RNG = np.random.default_rng(1234)


def reference(op: str, *inputs, **attrs) -> np.ndarray:
    """Run `op`'s reference with its full attributes, as the interpreter does."""
    opdef = get_op(op)
    _, full = check_attributes(opdef, attrs)
    return np.asarray(opdef.reference([np.asarray(value) for value in inputs], full))


def normal(*shape, dtype=np.float64) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


IR_MD_OPS = (
    "neg abs exp log sqrt rsqrt tanh sigmoid relu silu sin cos erf gelu cast add sub mul div pow maximum minimum "
    "eq ne lt le gt ge where reduce_sum reduce_mean reduce_max reduce_min softmax cumsum matmul linear layernorm "
    "rmsnorm batchnorm attention reshape transpose expand concat slice gather conv2d max_pool2d avg_pool2d "
    "selective_scan fused_matmul_bias_act fused_residual_layernorm fused_residual_rmsnorm fused_elementwise"
).split()


def test_every_op_of_ir_md_has_a_reference():
    ops = registered_ops()
    assert [name for name in IR_MD_OPS if ops[name].reference is None] == []


# --- elementwise -----------------------------------------------------------------------
UNARY_SCALAR = {
    "neg": lambda v: -v, "abs": abs, "exp": math.exp, "log": math.log, "sqrt": math.sqrt,
    "rsqrt": lambda v: 1 / math.sqrt(v), "tanh": math.tanh, "sigmoid": lambda v: 1 / (1 + math.exp(-v)),
    "relu": lambda v: max(v, 0.0), "silu": lambda v: v / (1 + math.exp(-v)), "sin": math.sin, "cos": math.cos,
    "erf": math.erf,
}


@pytest.mark.parametrize("op", sorted(UNARY_SCALAR))
def test_unary_ops_match_math(op):
    values = np.array([0.1, 0.5, 1.0, 2.5, 7.0]) if op in ("log", "sqrt", "rsqrt") else np.linspace(-3, 3, 13)
    expected = [UNARY_SCALAR[op](float(v)) for v in values]
    np.testing.assert_allclose(reference(op, values), expected, rtol=1e-12, atol=1e-15)


def test_sigmoid_does_not_overflow():
    result = reference("sigmoid", np.array([-1000.0, 1000.0], np.float32))
    np.testing.assert_array_equal(result, [0.0, 1.0])


def test_unary_ops_keep_the_operand_dtype():
    x = normal(4, dtype=np.float16)
    for op in UNARY_SCALAR:
        assert reference(op, np.abs(x) + 1).dtype == np.float16, op


@pytest.mark.parametrize("approximate", [False, True])
def test_gelu(approximate):
    values = np.linspace(-4, 4, 17)
    if approximate:
        expected = [0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3))) for v in values]
    else:
        expected = [v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in values]
    np.testing.assert_allclose(reference("gelu", values, approximate=approximate), expected, rtol=1e-12, atol=1e-15)


def test_binary_ops_broadcast():
    a, b = normal(2, 1, 3), normal(4, 1) + 3
    np.testing.assert_allclose(reference("sub", a, b), a - b)
    np.testing.assert_allclose(reference("div", a, b), a / b)
    np.testing.assert_allclose(reference("maximum", a, b), np.maximum(a, b))
    np.testing.assert_allclose(reference("pow", np.abs(a), b), np.abs(a) ** b)
    assert reference("add", a, b).shape == (2, 4, 3)


def test_integer_division_truncates_toward_zero():
    a = np.array([7, -7, 7, -7, 6], np.int32)
    b = np.array([2, 2, -2, -2, 3], np.int32)
    result = reference("div", a, b)
    np.testing.assert_array_equal(result, [3, -3, -3, 3, 2])
    assert result.dtype == np.int32


def test_integer_pow_takes_negative_exponents():
    np.testing.assert_allclose(reference("pow", np.array([2, 4], np.int32), np.array([-1, 2], np.int32)), [0.5, 16])


@pytest.mark.parametrize("op, expected", [
    ("eq", [False, True, False]), ("ne", [True, False, True]), ("lt", [True, False, False]),
    ("le", [True, True, False]), ("gt", [False, False, True]), ("ge", [False, True, True]),
])
def test_compare_ops(op, expected):
    result = reference(op, np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 2.0]))
    assert result.dtype == np.bool_
    np.testing.assert_array_equal(result, expected)


def test_where_broadcasts_all_three():
    cond = np.array([[True], [False]])
    result = reference("where", cond, np.array([1.0, 2.0, 3.0]), np.array(-1.0))
    np.testing.assert_array_equal(result, [[1, 2, 3], [-1, -1, -1]])


# --- casts and bf16 --------------------------------------------------------------------
def test_bf16_rounds_to_nearest_even():
    ulp = 2.0 ** -7  # bf16 keeps 7 explicit mantissa bits
    values = np.array([1.0, 1 + ulp / 2, 1 + 1.5 * ulp, 1 + 0.75 * ulp, -(1 + 0.25 * ulp), 3.14159], np.float32)
    rounded = round_to_bf16(values)
    np.testing.assert_array_equal(rounded[:5], [1.0, 1.0, 1 + 2 * ulp, 1 + ulp, -1.0])
    assert rounded[5] == np.float32(3.140625)
    assert not np.any(rounded.view(np.uint32) & 0xFFFF)


def test_bf16_keeps_specials():
    rounded = round_to_bf16(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32))
    assert np.isnan(rounded[0]) and rounded[1] == np.inf and rounded[2] == -np.inf
    assert np.signbit(rounded[4])


def test_cast_converts_and_rounds():
    x = np.array([1.7, -1.7, 0.0, 2.5], np.float32)
    np.testing.assert_array_equal(reference("cast", x, to=DType.i32), [1, -1, 0, 2])
    np.testing.assert_array_equal(reference("cast", x, to=DType.bool), [True, True, False, True])
    as_bf16 = reference("cast", np.array([1.00390625 + 2 ** -9], np.float32), to=DType.bf16)
    assert as_bf16.dtype == np.float32 and as_bf16[0] == np.float32(1.0078125)
    assert to_dtype(np.array([1, 2]), DType.f16).dtype == np.float16


# --- reductions and scans --------------------------------------------------------------
def test_reductions_with_and_without_keepdims():
    x = normal(2, 3, 4)
    np.testing.assert_allclose(reference("reduce_sum", x, axes=[0, 2]), [x[:, j, :].sum() for j in range(3)])
    np.testing.assert_allclose(reference("reduce_mean", x, axes=[-1], keepdims=True), x.mean(-1, keepdims=True))
    assert reference("reduce_max", x, axes=[1], keepdims=True).shape == (2, 1, 4)
    np.testing.assert_array_equal(reference("reduce_min", x, axes=[1]), [[min(x[i, :, k]) for k in range(4)] for i in range(2)])


def test_reduce_sum_keeps_small_integer_dtypes():
    assert reference("reduce_sum", np.ones((3, 4), np.int32), axes=[1]).dtype == np.int32


@pytest.mark.parametrize("exclusive", [False, True])
def test_cumsum(exclusive):
    x = normal(3, 5)
    expected = np.zeros_like(x)
    for row, col in itertools.product(range(3), range(5)):
        stop = col if exclusive else col + 1
        expected[row, col] = sum(x[row, :stop])
    np.testing.assert_allclose(reference("cumsum", x, axis=1, exclusive=exclusive), expected)
    np.testing.assert_allclose(reference("cumsum", x.T, axis=0, exclusive=exclusive), expected.T)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax(axis):
    x = normal(3, 4) * 5
    exps = np.vectorize(math.exp)(x)
    expected = exps / exps.sum(axis=axis, keepdims=True)
    result = reference("softmax", x, axis=axis)
    np.testing.assert_allclose(result, expected, rtol=1e-12)


# --- linear algebra --------------------------------------------------------------------
def naive_matmul(a, b):
    rows, inner = a.shape
    cols = b.shape[1]
    return np.array([[sum(a[i, k] * b[k, j] for k in range(inner)) for j in range(cols)] for i in range(rows)])


def test_matmul_transposes_and_batches():
    a, b = normal(2, 4, 3), normal(3, 5)
    result = reference("matmul", a, b)
    for batch in range(2):
        np.testing.assert_allclose(result[batch], naive_matmul(a[batch], b))
    np.testing.assert_allclose(reference("matmul", np.swapaxes(a, 1, 2), b, transpose_a=True), result)
    np.testing.assert_allclose(reference("matmul", a, b.T, transpose_b=True), result)


def test_matmul_rank_one_operands_follow_the_shape_rule():
    a, matrix, b = normal(3), normal(3, 4), normal(4)
    assert reference("matmul", a, matrix).shape == (4,)
    assert reference("matmul", matrix, b).shape == (3,)
    np.testing.assert_allclose(reference("matmul", a, a), a @ a)


def test_linear_with_and_without_bias():
    x, w, b = normal(2, 3), normal(3, 4), normal(4)
    np.testing.assert_allclose(reference("linear", x, w), naive_matmul(x, w))
    np.testing.assert_allclose(reference("linear", x, w, b), naive_matmul(x, w) + b)


@pytest.mark.parametrize("activation", ["none", "gelu", "silu"])
def test_fused_matmul_bias_act(activation):
    x, w, b = normal(2, 3), normal(3, 4), normal(4)
    pre = naive_matmul(x, w) + b
    expected = {
        "none": pre,
        "gelu": np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))(pre),
        "silu": np.vectorize(lambda v: v / (1 + math.exp(-v)))(pre),
    }[activation]
    np.testing.assert_allclose(reference("fused_matmul_bias_act", x, w, b, activation=activation), expected)


# --- norms -----------------------------------------------------------------------------
def naive_layernorm_rows(x2d, gamma, beta, eps):
    out = np.empty_like(x2d)
    for row in range(x2d.shape[0]):
        values = x2d[row]
        mean = sum(values) / len(values)
        variance = sum((v - mean) ** 2 for v in values) / len(values)
        out[row] = (values - mean) / math.sqrt(variance + eps) * gamma + beta
    return out


def test_layernorm_last_axis_and_from_axis_one():
    x = normal(2, 3, 4)
    gamma, beta = normal(4), normal(4)
    expected = naive_layernorm_rows(x.reshape(6, 4), gamma, beta, 1e-5).reshape(2, 3, 4)
    np.testing.assert_allclose(reference("layernorm", x, gamma, beta), expected, rtol=1e-10)
    gamma2, beta2 = normal(3, 4), normal(3, 4)
    expected2 = naive_layernorm_rows(x.reshape(2, 12), gamma2.ravel(), beta2.ravel(), 1e-3).reshape(2, 3, 4)
    np.testing.assert_allclose(reference("layernorm", x, gamma2, beta2, axis=1, eps=1e-3), expected2, rtol=1e-10)


def test_rmsnorm():
    x, gamma = normal(3, 4), normal(4)
    expected = np.array([row / math.sqrt(sum(v * v for v in row) / 4 + 1e-6) * gamma for row in x])
    np.testing.assert_allclose(reference("rmsnorm", x, gamma), expected, rtol=1e-10)


def test_residual_norms_normalise_the_sum():
    x, res, gamma, beta = normal(3, 4), normal(3, 4), normal(4), normal(4)
    np.testing.assert_allclose(reference("fused_residual_layernorm", x, res, gamma, beta, eps=1e-4),
                               naive_layernorm_rows(x + res, gamma, beta, 1e-4), rtol=1e-10)
    np.testing.assert_allclose(reference("fused_residual_rmsnorm", x, res, gamma),
                               reference("rmsnorm", x + res, gamma), rtol=1e-12)


def test_batchnorm_per_channel():
    x = normal(2, 3, 2, 2)
    scale, bias, mean, variance = normal(3), normal(3), normal(3), np.abs(normal(3)) + 0.1
    expected = np.empty_like(x)
    for n, c, h, w in itertools.product(range(2), range(3), range(2), range(2)):
        expected[n, c, h, w] = (x[n, c, h, w] - mean[c]) / math.sqrt(variance[c] + 1e-5) * scale[c] + bias[c]
    np.testing.assert_allclose(reference("batchnorm", x, scale, bias, mean, variance), expected, rtol=1e-10)


# --- attention and sequences -----------------------------------------------------------
def naive_attention(q, k, v, scale, keep=None, additive=None):
    batch, heads, queries, _ = q.shape
    out = np.zeros((batch, heads, queries, v.shape[-1]))
    for b, h, i in itertools.product(range(batch), range(heads), range(queries)):
        scores = [float(q[b, h, i] @ k[b, h, j]) * scale for j in range(k.shape[2])]
        if additive is not None:
            scores = [s + additive[i, j] for j, s in enumerate(scores)]
        allowed = [j for j in range(k.shape[2]) if keep is None or keep[i][j]]
        peak = max(scores[j] for j in allowed)
        weights = {j: math.exp(scores[j] - peak) for j in allowed}
        total = sum(weights.values())
        out[b, h, i] = sum(weights[j] / total * v[b, h, j] for j in allowed)
    return out


def test_attention_default_scale_is_inverse_sqrt_head_dim():
    q, k, v = normal(2, 2, 3, 4), normal(2, 2, 5, 4), normal(2, 2, 5, 6)
    np.testing.assert_allclose(reference("attention", q, k, v), naive_attention(q, k, v, 0.5), rtol=1e-10)
    np.testing.assert_allclose(reference("attention", q, k, v, scale=0.3), naive_attention(q, k, v, 0.3), rtol=1e-10)


def test_causal_attention_keeps_keys_up_to_the_query():
    q, k, v = normal(1, 2, 4, 3), normal(1, 2, 4, 3), normal(1, 2, 4, 3)
    keep = [[j <= i for j in range(4)] for i in range(4)]
    expected = naive_attention(q, k, v, 1 / math.sqrt(3), keep=keep)
    np.testing.assert_allclose(reference("attention", q, k, v, causal=True), expected, rtol=1e-10)


def test_attention_masks_bool_keep_and_additive():
    q, k, v = normal(1, 1, 3, 2), normal(1, 1, 4, 2), normal(1, 1, 4, 2)
    keep = RNG.random((3, 4)) < 0.6
    keep[:, 0] = True
    expected = naive_attention(q, k, v, 0.7, keep=keep)
    np.testing.assert_allclose(reference("attention", q, k, v, keep, scale=0.7), expected, rtol=1e-10)
    additive = normal(3, 4)
    expected = naive_attention(q, k, v, 0.7, additive=additive)
    np.testing.assert_allclose(reference("attention", q, k, v, additive, scale=0.7), expected, rtol=1e-10)


def naive_selective_scan(x, delta, a, bm, c):
    batch, steps, hidden = x.shape
    state_size = a.shape[1]
    y = np.zeros_like(x)
    for b, h in itertools.product(range(batch), range(hidden)):
        state = [0.0] * state_size
        for t in range(steps):
            for n in range(state_size):
                state[n] = math.exp(delta[b, t, h] * a[h, n]) * state[n] + delta[b, t, h] * bm[b, t, n] * x[b, t, h]
            y[b, t, h] = sum(state[n] * c[b, t, n] for n in range(state_size))
    return y


def test_selective_scan_matches_the_naive_loop():
    x, delta = normal(2, 5, 3), np.abs(normal(2, 5, 3))
    a, bm, c = -np.abs(normal(3, 4)), normal(2, 5, 4), normal(2, 5, 4)
    result = reference("selective_scan", x, delta, a, bm, c, state_size=4)
    np.testing.assert_allclose(result, naive_selective_scan(x, delta, a, bm, c), rtol=1e-10, atol=1e-12)


# --- shape ops -------------------------------------------------------------------------
def test_shape_ops():
    x = np.arange(24.0).reshape(2, 3, 4)
    assert reference("reshape", x, shape=[4, -1]).shape == (4, 6)
    np.testing.assert_array_equal(reference("reshape", x, shape=[-1]), np.arange(24.0))
    np.testing.assert_array_equal(reference("transpose", x, perm=[2, 0, 1])[3, 1, 2], x[1, 2, 3])
    expanded = reference("expand", np.array([[1.0], [2.0]]), shape=[3, 2, 4])
    assert expanded.shape == (3, 2, 4) and expanded[2, 1, 3] == 2.0 and expanded.flags.writeable
    np.testing.assert_array_equal(reference("slice", x, axis=2, start=1, len=2), x[:, :, 1:3])
    np.testing.assert_array_equal(reference("slice", x, axis=-3, start=1, len=1), x[1:])
    joined = reference("concat", x, x[:, :1], axis=1)
    assert joined.shape == (2, 4, 4) and np.array_equal(joined[:, 3], x[:, 0])


def test_gather_rows_and_other_axes():
    table = np.arange(12.0).reshape(4, 3)
    indices = np.array([[3, 0], [1, 1]], np.int32)
    np.testing.assert_array_equal(reference("gather", table, indices), [[table[3], table[0]], [table[1], table[1]]])
    np.testing.assert_array_equal(reference("gather", table, np.array([2, 0]), axis=1), table[:, [2, 0]])


def test_gather_out_of_range_is_an_error():
    with pytest.raises(RlxError, match="out of range"):
        reference("gather", np.zeros((4, 3)), np.array([4]))
    with pytest.raises(RlxError, match="out of range"):
        reference("gather", np.zeros((4, 3)), np.array([-1]))


# --- convolution and pooling -----------------------------------------------------------
def naive_conv2d(x, w, bias, stride, padding, dilation, groups):
    top, left, bottom, right = padding
    batch, channels, height, width = x.shape
    out_channels, group_channels, kernel_h, kernel_w = w.shape
    rows = (height + top + bottom - dilation[0] * (kernel_h - 1) - 1) // stride[0] + 1
    cols = (width + left + right - dilation[1] * (kernel_w - 1) - 1) // stride[1] + 1
    per_group = out_channels // groups
    out = np.zeros((batch, out_channels, rows, cols))
    for n, o, i, j in itertools.product(range(batch), range(out_channels), range(rows), range(cols)):
        total = 0.0 if bias is None else bias[o]
        for c, ki, kj in itertools.product(range(group_channels), range(kernel_h), range(kernel_w)):
            row = i * stride[0] + ki * dilation[0] - top
            col = j * stride[1] + kj * dilation[1] - left
            if 0 <= row < height and 0 <= col < width:
                total += x[n, (o // per_group) * group_channels + c, row, col] * w[o, c, ki, kj]
        out[n, o, i, j] = total
    return out


@pytest.mark.parametrize("stride, padding, dilation, groups", [
    ((1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((2, 1), (1, 0, 2, 1), (1, 1), 1),
    ((1, 2), (1, 1, 1, 1), (2, 1), 2),
    ((2, 2), (0, 1, 0, 1), (1, 2), 4),
])
def test_conv2d_matches_the_naive_loop(stride, padding, dilation, groups):
    x = normal(2, 4, 6, 7)
    w = normal(4, 4 // groups, 3, 2)
    bias = normal(4)
    attrs = dict(stride=list(stride), padding=list(padding), dilation=list(dilation), groups=groups)
    expected = naive_conv2d(x, w, bias, stride, padding, dilation, groups)
    np.testing.assert_allclose(reference("conv2d", x, w, bias, **attrs), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(reference("conv2d", x, w, **attrs), expected - bias.reshape(1, -1, 1, 1),
                               rtol=1e-10, atol=1e-12)


def naive_pool(x, kernel, stride, padding, combine):
    top, left, bottom, right = padding
    batch, channels, height, width = x.shape
    rows = (height + top + bottom - kernel[0]) // stride[0] + 1
    cols = (width + left + right - kernel[1]) // stride[1] + 1
    out = np.zeros((batch, channels, rows, cols))
    for n, c, i, j in itertools.product(range(batch), range(channels), range(rows), range(cols)):
        cells = []
        for ki, kj in itertools.product(range(kernel[0]), range(kernel[1])):
            row, col = i * stride[0] + ki - top, j * stride[1] + kj - left
            inside = 0 <= row < height and 0 <= col < width
            cells.append(x[n, c, row, col] if inside else None)
        out[n, c, i, j] = combine(cells)
    return out


def test_max_pool_ignores_padding():
    x = normal(1, 2, 5, 5)
    expected = naive_pool(x, (3, 3), (2, 2), (1, 1, 1, 1), lambda cells: max(v for v in cells if v is not None))
    result = reference("max_pool2d", x, kernel=[3, 3], stride=[2, 2], padding=[1, 1, 1, 1])
    np.testing.assert_allclose(result, expected)


def test_avg_pool_divides_by_the_full_kernel_area_padding_included():
    x = normal(1, 2, 5, 4)
    expected = naive_pool(x, (2, 3), (2, 3), (1, 0, 0, 2), lambda cells: sum(v or 0.0 for v in cells) / 6)
    result = reference("avg_pool2d", x, kernel=[2, 3], padding=[1, 0, 0, 2])  # stride defaults to the kernel
    np.testing.assert_allclose(result, expected)
    ones = reference("avg_pool2d", np.ones((1, 1, 2, 2)), kernel=[2, 2], padding=[1, 1, 1, 1])
    np.testing.assert_allclose(ones, [[[[0.25, 0.25], [0.25, 0.25]]]])


# --- fused regions ---------------------------------------------------------------------
def test_fused_elementwise_runs_its_chain():
    a, b, c = normal(2, 3), normal(2, 3), normal(3)
    chain = "mul($0, $1); gelu(%0) {approximate = true}; add(%1, $2); exp(%2)"
    expected = np.exp(reference("gelu", a * b, approximate=True) + c)
    np.testing.assert_allclose(reference("fused_elementwise", a, b, c, chain=chain), expected, rtol=1e-12)


def test_references_ignore_stage_annotations():
    opdef = get_op("matmul")
    a, b = normal(2, 3), normal(3, 2)
    attrs = {"transpose_a": False, "transpose_b": False, "kernel": "gemm", "workspace": 4194304}
    np.testing.assert_allclose(opdef.reference([a, b], attrs), a @ b)


def test_erf_is_the_c_librarys_erf_on_whole_arrays():
    from rlxir.ops.special import erf as array_erf

    rng = np.random.default_rng(0)
    edges = [0.0, -0.0, 1e-300, -1e-310, 2.0 ** -28, 0.84375, 1.25, 1 / 0.35, 6.0, -6.0, 30.0]
    values = np.concatenate([rng.normal(0, 2, 20000), rng.uniform(-7, 7, 20000), np.linspace(-6.5, 6.5, 10001), edges])
    got = array_erf(values)
    want = np.array([math.erf(value) for value in values])
    assert np.all(np.abs(got - want) <= np.spacing(np.abs(want)))  # within an ulp
    assert list(array_erf(np.array([np.inf, -np.inf]))) == [1.0, -1.0] and np.isnan(array_erf(np.array([np.nan])))[0]
    assert np.signbit(array_erf(np.array([-0.0])))[0] and array_erf(np.float32(0.5)).shape == ()
