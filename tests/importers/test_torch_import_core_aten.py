"""Core ATen op families of the PyTorch importer, each on a tiny module exported here with
static shapes and compared with eager PyTorch on the interpreter: the functions the IR
builds from its own (trigonometric, hyperbolic, rounding), reductions, indexing and
scatter, sort, norms with statistics, pools with indices, transposed convolutions,
distances; and the arguments that are refused rather than dropped."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from rlxir.errors import RlxError  # noqa: E402
from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.torch import import_torch  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402


class Apply(torch.nn.Module):
    """forward(a[, b[, c[, d]]]) = function(a[, b[, c[, d]]])."""

    def __init__(self, function):
        super().__init__()
        self.function = function

    def forward(self, a, b=None, c=None, d=None):
        return self.function(*(tensor for tensor in (a, b, c, d) if tensor is not None))


def matches(function, *args, rtol=1e-5, atol=1e-5):
    """Import `function` over `args` (static shapes) and compare every output with PyTorch's."""
    module = Apply(function).eval()
    imported = import_torch(module, args, dims=[None] * len(args))
    with torch.no_grad():
        expected = module(*args)
    expected = torch.utils._pytree.tree_leaves(expected)
    feeds = {value: arg.numpy() for value, arg in zip(imported.inputs.values(), args)}
    results = interpret(imported.graph, feeds, dict(imported.params))
    outputs = imported.graph.outputs[len(imported.graph.outputs) - len(expected):]
    for value, want in zip(outputs, expected):
        np.testing.assert_allclose(results[value], want.numpy(), rtol=rtol, atol=atol, equal_nan=True)
    return imported


def values(*shape, low=-3.0, high=3.0, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(*shape, generator=generator) * (high - low) + low


# --- elementwise functions built from the IR's ------------------------------------------
@pytest.mark.parametrize("function", [torch.tan, torch.sinh, torch.cosh, torch.asinh, torch.atan, torch.expm1,
                                      torch.log1p, torch.log2, torch.log10, torch.trunc, torch.round, torch.sign,
                                      F.elu, F.leaky_relu, F.selu, F.celu, F.mish])
def test_elementwise_functions(function):
    matches(function, values(4, 5, low=-0.9, high=5.0) if function in (torch.log1p,) else values(4, 5))


@pytest.mark.parametrize("function", [torch.asin, torch.acos, torch.atanh])
def test_inverse_trigonometric_inside_their_domain(function):
    matches(function, values(3, 7, low=-0.999, high=0.999))


def test_acosh_and_logs_of_positive_values():
    matches(lambda x: (torch.acosh(x), torch.log2(x), torch.log10(x)), values(3, 4, low=1.0, high=9.0))


def test_atan2_in_every_quadrant_and_at_the_origin():
    y = torch.tensor([1.0, 1.0, -1.0, -1.0, 0.0, 0.0, 2.0, -3.0])
    x = torch.tensor([1.0, -1.0, 1.0, -1.0, 0.0, 2.0, 0.0, 0.0])
    matches(torch.atan2, y, x)


def test_round_halves_to_even_and_with_decimals():
    x = torch.tensor([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.49, -3.51, 1.25, 0.125])
    matches(lambda t: (torch.round(t), torch.round(t, decimals=1), torch.round(t * 100, decimals=-1)), x)


def test_nan_and_inf_tests_and_boolean_ops():
    x = torch.tensor([1.0, float("nan"), float("inf"), -float("inf"), 0.0, -2.0])
    matches(lambda t: (torch.isnan(t), torch.isinf(t), torch.logical_xor(t > 0, t < 1), ~(t > 0),
                       (t > 0) & (t < 3), (t > 0) | (t < -1), (t > 0) ^ (t < 3)), x)


def test_bitwise_not_of_integers_is_two_complement():
    matches(lambda t: torch.bitwise_not(t.to(torch.int64)), torch.tensor([0.0, 3.0, -5.0]))


def test_bitwise_and_of_integers_is_refused_naming_the_op():
    with pytest.raises(RlxError, match=r"bitwise_and on i64 values"):
        matches(lambda t: torch.bitwise_and(t.to(torch.int64), 3), torch.tensor([1.0, 2.0]))


# --- reductions ----------------------------------------------------------------------------
def test_prod_cumprod_var_std_any():
    x = values(3, 5, low=0.5, high=1.5)
    matches(lambda t: (t.prod(), t.prod(1), t.prod(0, keepdim=True), t.cumprod(1), t.cumprod(0), t.var(1),
                       t.std(0, correction=0), torch.var_mean(t, 1), (t > 1).any(1), (t > 1.4).all()), x)


def test_logsumexp_and_reductions_of_a_0d_tensor():
    x = values(4, 6)
    matches(lambda t, s: (torch.logsumexp(t, 1), s.sum(), s.amax(), s.argmax(), s.cumsum(0)), x, torch.tensor(2.0))


# --- indexing and scatter -------------------------------------------------------------------
def test_index_with_skipped_axes_and_index_put():
    x = values(4, 5, 6)
    rows, columns = torch.tensor([0, 2, -1]), torch.tensor([1, 1, 3])

    class Indexing(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("rows", rows)
            self.register_buffer("columns", columns)

        def forward(self, t, v):
            written = t.index_put((self.rows,), v)
            added = t.index_put((self.rows, self.columns), v[:, 0], accumulate=True)
            return t[:, self.rows], t[:, self.rows, self.columns], t[self.rows, :, self.columns], written, added

    module = Indexing().eval()
    args = (x, values(3, 5, 6, seed=1))
    imported = import_torch(module, args, dims=[None, None])
    results = interpret(imported.graph, {name: arg.numpy() for name, arg in zip(imported.inputs.values(), args)},
                        dict(imported.params))
    for value, want in zip(imported.graph.outputs, module(*args)):
        np.testing.assert_allclose(results[value], want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("reduce", ["sum", "prod", "amax", "amin", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    index = torch.tensor([[0, 1, 0], [2, 2, 1]])
    matches(lambda x, src: x.scatter_reduce(1, index, src, reduce, include_self=include_self), values(2, 4),
            values(2, 3, seed=1))


def test_scatter_and_scatter_add():
    index = torch.tensor([[0, 1, 2], [2, 0, 1]])
    matches(lambda x, src: (x.scatter(1, index, src), x.scatter(1, index, 1.5), x.scatter_add(0, index, src)),
            values(3, 4), values(2, 5, seed=1))


def test_sort_repeat_diagonal_as_strided():
    x = values(4, 5)
    matches(lambda t: (*torch.sort(t, 1), *torch.sort(t, 0, descending=True), t.repeat(2, 1, 3),
                       torch.diagonal(t, 1), torch.diagonal(t, -2), torch.as_strided(t, (3, 3), (1, 5), 2)), x)


def test_a_value_dependent_shape_is_refused_with_its_reason():
    with pytest.raises(RlxError, match=r"depends on the values"):
        matches(lambda t: torch.nonzero(t), values(3, 3))


# --- norms, pools, convolutions, distances ------------------------------------------------
def test_group_norm_and_batch_norm_in_training_mode():
    norm = torch.nn.GroupNorm(2, 4)
    matches(lambda t: (norm(t), F.batch_norm(t, None, None, training=True)), values(2, 4, 3, 3))


def test_layer_norm_statistics():
    matches(lambda t, w, b: torch.ops.aten.native_layer_norm(t, [5], w, b, 1e-5), values(3, 5), values(5, seed=1),
            values(5, seed=2))


@pytest.mark.parametrize("dilation", [1, 2])
def test_max_pool_with_indices(dilation):
    matches(lambda t: F.max_pool2d(t, 3, 2, 1, dilation=dilation, return_indices=True), values(2, 3, 9, 8))


def test_pools_of_unbatched_inputs():
    matches(lambda t: (F.max_pool2d(t, 2), F.avg_pool2d(t, 2), F.adaptive_avg_pool2d(t, (3, 2))), values(3, 6, 6))


@pytest.mark.parametrize("stride,padding,output_padding,groups", [(1, 0, 0, 1), (2, 1, 1, 1), (2, 0, 0, 2)])
def test_transposed_convolutions(stride, padding, output_padding, groups):
    weight2d, weight1d = values(4, 3, 3, 2, seed=1), values(4, 3, 3, seed=2)
    matches(lambda x, y: (F.conv_transpose2d(x, weight2d, stride=stride, padding=padding,
                                             output_padding=output_padding, groups=groups),
                          F.conv_transpose1d(y, weight1d, stride=stride, padding=padding,
                                             output_padding=output_padding, groups=groups)),
            values(2, 4, 5, 6), values(2, 4, 7))


def test_cdist_and_pdist():
    matches(lambda a, b: (torch.cdist(a, b), torch.cdist(a, b, p=1), torch.cdist(a, b, p=float("inf")),
                          F.pdist(a), F.pdist(a, p=3)), values(5, 3), values(4, 3, seed=1))


def test_addmm_honours_alpha_and_beta():
    matches(lambda bias, a, b: (torch.addmm(bias, a, b, beta=0.5, alpha=2.0), torch.addmm(bias, a, b, beta=0)),
            values(3, 4), values(3, 5, seed=1), values(5, 4, seed=2))


def test_attention_with_dropout_in_training_is_refused():
    q = values(1, 2, 3, 4)
    with pytest.raises(UnsupportedModel, match=r"dropout_p=0.5"):
        matches(lambda a: F.scaled_dot_product_attention(a, a, a, dropout_p=0.5), q)


def test_cummax_cummin_keep_the_last_index_among_equal_values():
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0, 5.0, 5.0, 0.0], [2.0, 1.0, 1.0, 4.0, 4.0, -1.0, 6.0]])
    matches(lambda t: (*torch.cummax(t, 1), *torch.cummin(t, 1), *torch.cummax(t, 0)), x)


def test_constants_made_from_numbers_are_evaluated_while_importing():
    matches(lambda t: t * torch.linspace(0, 1, 5) + torch.eye(5) + torch.logspace(0, 1, 5), values(5, 5))


def test_more_elementwise_functions():
    x = torch.tensor([1.5, -2.0, 0.0, -0.0, float("nan"), 3.25])
    y = torch.tensor([-1.0, 2.0, -0.0, 1.0, 4.0, float("nan")])
    matches(lambda a, b: (torch.special.erfc(a), torch.exp2(a), torch.copysign(a, b), torch.signbit(b),
                          torch.fmax(a, b), torch.fmin(a, b), torch.ldexp(a, torch.tensor([1, 2, 3, 0, 1, -1]))),
            x, y)


def test_index_reduce_unfold_diagonal_scatter():
    index = torch.tensor([0, 2, 0])
    matches(lambda x, src, d: (x.index_reduce(0, index, src, "amax"), x.index_reduce(0, index, src, "mean",
                                                                                       include_self=False),
                               x.unfold(1, 2, 1), x.unfold(0, 2, 2), torch.diagonal_scatter(x, d, 1)),
            values(4, 5), values(3, 5, seed=1), values(4, seed=2))


def test_median_kthvalue_and_masked_writes():
    mask = torch.tensor([[True, False, True], [False, False, True]])

    def function(x):
        y = x.clone()
        y[mask] = 7.0
        return (torch.median(x), *torch.median(x, 1), *torch.kthvalue(x, 2, 0), y,
                torch.ops.aten.view_copy(x, [3, 2]))

    matches(function, values(2, 3))


def test_adaptive_max_pool_and_upsampling():
    x = values(2, 3, 7, 5)
    matches(lambda t: (*F.adaptive_max_pool2d(t, (3, 2), return_indices=True), F.adaptive_max_pool2d(t[0], 4),
                       F.interpolate(t, size=(9, 4)), F.interpolate(t, scale_factor=1.7),
                       F.interpolate(t, size=(10, 7), mode="bilinear"),
                       F.interpolate(t, size=(3, 8), mode="bilinear", align_corners=True),
                       F.interpolate(t, scale_factor=0.6, mode="bilinear")), x)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample(mode, padding_mode, align_corners):
    grid = values(2, 3, 4, 2, low=-1.2, high=1.2, seed=1)
    matches(lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners),
            values(2, 3, 5, 6), grid)


def test_products_with_a_bias_distances_and_negative_pads():
    matches(lambda x, m, v, b: (torch.addmv(x, m, v, beta=0.5, alpha=2), torch.addbmm(m, b, b.transpose(1, 2)),
                                torch.dist(m, m * 2, 3), F.pad(b, (-1, 2), mode="replicate"),
                                F.pad(b, (1, -2), mode="circular"), F.pad(b, (-4, 2), mode="replicate")),
            values(3), values(3, 3, seed=1), values(3, seed=2), values(2, 3, 4, seed=3))


def test_rrelu_in_eval_mode_and_batch_norm_with_update():
    matches(lambda x, mean, var: (F.rrelu(x), F.batch_norm(x, mean, var, training=True)), values(2, 3, 4, 4),
            values(3, seed=1), values(3, low=0.5, high=2.0, seed=2))


def test_masked_scatter_and_index_select_of_a_0d_tensor():
    mask = torch.tensor([[True, False, True, True], [False, True, False, True]])
    matches(lambda x, src, s: (x.masked_scatter(mask, src), x.masked_scatter(mask[0], src),
                               torch.index_select(s, 0, torch.tensor([0]))), values(2, 4), values(3, 3, seed=1),
            torch.tensor(1.5))


def test_searchsorted_bucketize_and_as_strided_scatter():
    ordered = torch.tensor([-1.0, 0.0, 0.5, 2.0])
    matches(lambda v, src: (torch.searchsorted(ordered, v), torch.searchsorted(ordered, v, right=True),
                            torch.bucketize(v, ordered), torch.searchsorted(ordered.repeat(2, 1), v),
                            torch.as_strided_scatter(v, src, (2, 2), (1, 3), 1)),
            torch.tensor([[-2.0, 0.0, 0.7], [2.0, 3.0, 0.5]]), values(2, 2))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(mode):
    indices, offsets = torch.tensor([1, 2, 4, 5, 4, 3, 2, 0]), torch.tensor([0, 3, 3, 6])
    matches(lambda table, weights: (F.embedding_bag(indices, table, offsets, mode=mode),
                                    F.embedding_bag(indices, table, offsets, mode=mode, padding_idx=4),
                                    F.embedding_bag(indices.reshape(2, 4), table, mode=mode),
                                    F.embedding_bag(indices, table, offsets, mode="sum", per_sample_weights=weights)),
            values(6, 3), values(8, seed=1))


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 2), (1, 2, 2, 1)])
def test_3d_convolutions(stride, padding, dilation, groups):
    weight, bias = values(4, 4 // groups, 3, 2, 3, seed=1), values(4, seed=2)
    matches(lambda x: F.conv3d(x, weight, bias, stride=stride, padding=padding, dilation=dilation, groups=groups),
            values(2, 4, 7, 6, 8), atol=1e-4)  # sums of 72 products of values up to 9: float32 rounding


@pytest.mark.parametrize("ceil_mode", [False, True])
def test_3d_pools(ceil_mode):
    x = values(2, 3, 5, 6, 7)
    matches(lambda t: (*F.max_pool3d(t, 3, 2, 1, ceil_mode=ceil_mode, return_indices=True),
                       F.max_pool3d(t, 2, dilation=2), F.avg_pool3d(t, 3, 2, 1, ceil_mode=ceil_mode),
                       F.avg_pool3d(t, 2, 1, 1, count_include_pad=False), F.avg_pool3d(t[0], 2, divisor_override=3),
                       F.adaptive_avg_pool3d(t, (2, 4, 3)), *F.adaptive_max_pool3d(t, (2, 4, 3), return_indices=True)),
            x)


def test_gamma_functions():
    x = torch.tensor([0.1, 0.5, 1.0, 1.5, 2.0, 3.7, 12.0, 150.0, -0.5, -2.3, -7.9, 0.0, -3.0])
    matches(lambda t: (torch.lgamma(t), torch.digamma(t), torch.special.polygamma(1, t.abs() + 0.2),
                       torch.special.polygamma(3, t.abs() + 0.2), torch.mvlgamma(t.abs() + 2, 3)), x)


def test_erfinv_ndtri_and_i0():
    x = torch.tensor([-0.999, -0.5, 0.0, 0.1, 0.7, 0.9999, 1.0, -1.0])
    matches(lambda t: (torch.erfinv(t), torch.special.ndtri((t + 1) / 2), torch.i0(t * 30), torch.i0(t * 50)), x,
            rtol=2e-5)


def test_nonzero_static_nanmedian_frexp_erfcx_and_bilinear_forms():
    x = torch.tensor([[0.0, 1.5, float("nan"), -2.0], [3.0, 0.0, 0.25, float("nan")]])
    weight = values(2, 4, 4, seed=1)
    matches(lambda t, y: (torch.nonzero_static(t, size=5), torch.nonzero_static(t, size=2, fill_value=7),
                          torch.nanmedian(t), *torch.nanmedian(t, 1), *torch.frexp(y), torch.special.erfcx(y * 4),
                          F.bilinear(y[:, :4], y[:, 1:], weight)),
            x, values(2, 5, seed=2))


def test_modified_bessel_functions_and_angle():
    x = torch.tensor([-45.0, -3.5, -0.2, 0.0, 0.7, 2.0, 12.0, 60.0])
    matches(lambda t: (torch.special.i1(t), torch.special.i0e(t), torch.special.i1e(t),
                       torch.special.spherical_bessel_j0(t), torch.angle(t)), x, rtol=2e-5)


def test_batch_norm_in_eval_returns_its_saved_statistics_empty():
    matches(lambda x, mean, var: torch.ops.aten._native_batch_norm_legit_no_training(x, None, None, mean, var, 0.1,
                                                                                      1e-5),
            values(2, 3, 4), values(3, seed=1), values(3, low=0.5, high=2.0, seed=2))


def test_transposed_3d_convolution():
    weight = values(4, 1, 2, 3, 2, seed=1)
    matches(lambda x: F.conv_transpose3d(x, weight, stride=(2, 1, 2), padding=(0, 1, 1), output_padding=(1, 0, 1),
                                         groups=2), values(2, 4, 3, 4, 5), atol=1e-4)


def test_hypot_logcumsumexp_put():
    index = torch.tensor([0, -1, 5, 2])
    matches(lambda x, y, src: (torch.hypot(x, y), torch.logcumsumexp(x * 40, 1), x.put(index, src),
                               x.put(index, src, accumulate=True)),
            values(2, 4), values(2, 4, seed=1), values(4, seed=2))


@pytest.mark.parametrize("reduce", ["sum", "max", "min", "prod", "mean"])
def test_segment_reduce(reduce):
    lengths = torch.tensor([2, 0, 3, 1])
    matches(lambda x: (torch.segment_reduce(x, reduce, lengths=lengths, initial=0.5),
                       torch.segment_reduce(x, reduce, lengths=lengths)), values(6, 2))
