"""ATen ops of the PyTorch importer, each on a tiny module exported here and compared with
eager PyTorch: ceil-mode and exclude-pad pooling, pad, roll, writes into slices, fills,
strided slices, min / max and their indices, the ``_as`` reshapes; and where an
unsupported op is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from test_torch_import import check, ops_of, unmapped  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.pooling import ceil_mode_padding  # noqa: E402
from rlxir.importers.torch import import_torch  # noqa: E402
from rlxir.symbolic import Expr  # noqa: E402


class Apply(torch.nn.Module):
    """forward(x[, y]) = function(x[, y]): a module around one expression."""

    def __init__(self, function):
        super().__init__()
        self.function = function

    def forward(self, x, y=None):
        return self.function(x) if y is None else self.function(x, y)


def pool_of(imported, name: str) -> dict:
    graph = imported.graph
    return graph.full_attrs(next(value for value in graph.ops() if graph.op(value) == name))


# --- pooling ---------------------------------------------------------------------------
def test_max_pool_ceil_mode_is_extra_bottom_right_padding():
    pool = torch.nn.MaxPool2d(3, stride=2, ceil_mode=True)
    imported = check(pool, (torch.randn(2, 3, 8, 9),))
    assert tuple(pool_of(imported, "max_pool2d")["padding"]) == (0, 0, 1, 0)  # 8 rows: 4 windows, not 3


def test_max_pool_ceil_mode_drops_a_window_that_starts_in_the_padding():
    pool = torch.nn.MaxPool2d(2, stride=2, padding=1, ceil_mode=True)
    x = torch.randn(2, 2, 5, 5)
    assert pool(x).shape[-1] == 3  # ceil((5 + 2 - 2) / 2) + 1 = 4, the 4th would start past the input
    check(pool, (x,))


@pytest.mark.parametrize("include_pad", [True, False])
@pytest.mark.parametrize("padding", [0, 1])
def test_avg_pool_ceil_mode_does_not_count_the_ceil_padding(padding, include_pad):
    pool = torch.nn.AvgPool2d(3, stride=2, padding=padding, ceil_mode=True, count_include_pad=include_pad)
    imported = check(pool, (torch.rand(2, 3, 8, 8) + 1,))
    assert "mul" in ops_of(imported)  # the border windows divide by fewer cells than 9


def test_avg_pool_excluding_padding_without_ceil_mode():
    pool = torch.nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)
    check(pool, (torch.rand(2, 2, 6, 5) + 1,))


def test_avg_pool_with_divisor_override():
    check(torch.nn.AvgPool2d(2, stride=1, divisor_override=3), (torch.randn(2, 2, 6, 4),))


def test_ceil_mode_over_a_symbolic_spatial_dim_is_refused_naming_it():
    # torch.export rarely keeps a spatial dim symbolic through a pool; the rule is the importer's
    with pytest.raises(UnsupportedModel, match=r"ceil_mode pool over the symbolic spatial dim H"):
        ceil_mode_padding((Expr.symbol("H"), 8), (3, 3), (2, 2), (0, 0, 0, 0))


@pytest.mark.parametrize("size", [(1, 1), (3, 2), (5, 3), (4, None)])
def test_adaptive_avg_pool_to_any_size(size):
    imported = check(torch.nn.AdaptiveAvgPool2d(size), (torch.randn(2, 3, 12, 7),))
    if size == (3, 2):  # 12 rows into 3 is a pool; 7 columns into 2 windows of 4 that overlap is not
        assert "matmul" in ops_of(imported)


# --- pad and roll ----------------------------------------------------------------------
@pytest.mark.parametrize("mode, amounts", [("constant", (1, 2, 0, 3)), ("reflect", (2, 1, 1, 3)),
                                           ("replicate", (1, 2, 2, 0)), ("circular", (2, 1, 0, 1))])
def test_pad_modes(mode, amounts):
    imported = check(Apply(lambda x: F.pad(x, amounts, mode=mode)), (torch.randn(2, 3, 5, 4),))
    assert "concat" in ops_of(imported)


def test_constant_pad_with_a_value_and_a_negative_amount_crops():
    check(Apply(lambda x: F.pad(x, (-1, 2, 1, -2), value=-1.5)), (torch.randn(2, 5, 6),))


def test_constant_pad_nd_of_an_integer_tensor():
    check(Apply(lambda x: torch.constant_pad_nd(x, (1, 1), 7)), (torch.arange(12).reshape(2, 6),))


def test_roll_over_dims_and_flattened():
    x = torch.randn(2, 4, 5)
    imported = check(Apply(lambda x: torch.roll(x, (1, -2), (1, 2)) + torch.roll(x, 7, 2)), (x,))
    assert "slice" in ops_of(imported)
    check(Apply(lambda x: torch.roll(x[0], 3)), (x,))  # x[0] is static: flattened, rolled, reshaped


def test_roll_of_the_symbolic_batch_is_refused_naming_the_node():
    with pytest.raises(UnsupportedModel, match=r"node roll \(aten.roll.default\): a roll of the symbolic dim B"):
        import_torch(Apply(lambda x: torch.roll(x, 1, 0)), (torch.randn(3, 4),))


# --- writing into slices, fills --------------------------------------------------------
def overwrite_rows(x, y):
    z = x.clone()
    z[:, 1:3] = y[:, :2] * 2
    z[:, ::2, -1] = 5.0
    z[:, 4] = y[:, 0]
    return z


def test_slice_scatter_and_select_scatter_on_run_time_values():
    imported = check(Apply(overwrite_rows), (torch.randn(2, 6, 3), torch.randn(2, 6, 3)))
    assert {"concat", "gather"} <= ops_of(imported)


def test_fill_full_like_and_new_full():
    def fills(x):
        scale = x[:, :1, :1].sum()  # a 0-d value computed at run time
        return (x.clone().fill_(2.5) + torch.full_like(x, -1.0) + x.new_full((x.shape[0], 4, 3), 0.5)
                + torch.zeros_like(x).fill_(scale))

    check(Apply(fills), (torch.randn(2, 4, 3),))


def test_static_masks_built_by_writing_slices_fold_to_a_literal():
    def windows(x):
        mask = x.new_zeros((6, 6))
        for index, rows in enumerate((slice(0, -3), slice(-3, -1), slice(-1, None))):
            mask[rows, :] = index
        return x + torch.roll(mask, 1, 0)

    imported = check(Apply(windows), (torch.randn(2, 6, 6),))
    assert ops_of(imported) == {"add"}


# --- strided slices --------------------------------------------------------------------
def test_slice_with_steps_on_static_dims():
    imported = check(Apply(lambda x: x[:, 1::2, ::3] + x[:, :-1:2, 1::3]), (torch.randn(2, 7, 8),))
    assert "gather" in ops_of(imported)


def test_long_strided_slice_indices_are_a_running_sum_not_a_param():
    imported = check(Apply(lambda x: x[:, ::2]), (torch.randn(2, 300),))
    assert imported.params == {}
    assert "cumsum" in ops_of(imported)


# --- min / max -------------------------------------------------------------------------
def extremes(x, y):
    low = torch.min(x, dim=1)
    high = x.max(dim=-1, keepdim=True)
    return (low.values, low.indices, high.values, high.indices, x.min(), torch.max(x, y), torch.min(x, y),
            torch.amin(x, (1, 2)), x.argmax(), x.argmin(1, keepdim=True))


def test_min_max_variants_and_first_extreme_indices():
    x = torch.tensor([[[1.0, 3.0, 3.0], [2.0, -1.0, -1.0]], [[0.0, 0.0, 5.0], [5.0, 4.0, 0.0]]])  # ties
    imported = check(Apply(extremes), (x, torch.randn(2, 2, 3)))
    assert {"reduce_min", "reduce_max", "topk", "minimum", "maximum"} <= ops_of(imported)


def test_max_dim_without_reading_the_indices_is_only_a_reduction():
    imported = check(Apply(lambda x: torch.max(x, 1).values), (torch.randn(2, 5),))
    assert ops_of(imported) == {"reduce_max"}


def test_topk_values_and_indices():
    x = torch.randn(2, 5)  # no ties: PyTorch leaves the order of tied indices open
    imported = check(Apply(lambda x: torch.topk(x, 3)), (x,))
    check(Apply(lambda x: torch.topk(x, 1, dim=0, largest=False)), (x,))
    assert {"topk", "gather_elements"} <= ops_of(imported)


# --- rounding division and remainders --------------------------------------------------
def rounded(x, y):
    return (torch.div(x, y, rounding_mode="floor"), torch.div(x, y, rounding_mode="trunc"), x // y,
            torch.remainder(x, y), torch.fmod(x, y), torch.floor(x * 1.5) + torch.ceil(x * 1.5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_div_rounding_modes_floor_divide_remainder_fmod_floor_ceil(dtype):
    x = torch.tensor([[7, -7, 7, -7, 0, 5], [9, -9, 1, -1, 6, -6]]).to(dtype)
    y = torch.tensor([[2, 2, -2, -2, 3, 5], [4, 4, -3, 3, -4, 4]]).to(dtype)
    if dtype is torch.int64:
        check(Apply(lambda x, y: rounded(x, y)[:5]), (x, y))
    else:
        check(Apply(rounded), (x * 1.25, y))


# --- shapes of other tensors -----------------------------------------------------------
def test_reshape_as_view_as_expand_as_and_copy():
    def as_others(x, y):
        z = x.clone()
        z.copy_(y.transpose(1, 2)[:, :1])  # broadcast over the rows of z
        return x.reshape_as(y) + x.view_as(y) + y[:, :1].expand_as(y), z

    check(Apply(as_others), (torch.randn(2, 4, 3), torch.randn(2, 3, 4)))


# --- where an unsupported op is --------------------------------------------------------
class Unmapped(torch.nn.Module):
    def forward(self, x):
        return unmapped(x)  # the unsupported call


class DilatedPool(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = torch.nn.MaxPool2d(2, dilation=2)

    def forward(self, x):
        return self.pool(x) * 2  # the surprised call


class TrainingAttention(torch.nn.Module):
    def forward(self, x):
        return F.scaled_dot_product_attention(x, x, x, dropout_p=0.5) * 2  # the refused call


def line_marked(comment: str) -> int:
    return next(number for number, text in enumerate(Path(__file__).read_text().splitlines(), 1)
                if text.endswith(comment))


def test_an_unsupported_op_is_located_at_the_models_line():
    line = line_marked("# the unsupported call")
    with pytest.raises(UnsupportedModel) as raised:
        import_torch(Unmapped(), (torch.randn(2, 4),))
    error = raised.value
    assert (error.file, error.line, error.col) == (__file__, line, 9)
    assert f"rlxtest.unmapped x1 (first at {Path(__file__).name}:{line})" in error.message
    assert "return unmapped(x)" in error.render()


def test_a_refused_node_is_located_at_the_models_line_not_inside_torch():
    with pytest.raises(UnsupportedModel, match=r"scaled_dot_product_attention \(aten.scaled_dot_product_attention"
                                               r".default\): scaled_dot_product_attention with dropout_p=0.5") \
            as raised:
        import_torch(TrainingAttention(), (torch.randn(2, 3, 4, 8),))
    assert (raised.value.file, raised.value.line) == (__file__, line_marked("# the refused call"))


def test_a_handler_that_fails_on_odd_arguments_is_a_located_error(monkeypatch):
    from rlxir.importers.torch_registry import CONVERTERS

    def surprised(ctx, node, args, kwargs):
        raise IndexError("list index out of range")

    monkeypatch.setitem(CONVERTERS, "aten.max_pool2d", surprised)
    with pytest.raises(UnsupportedModel, match=r"node max_pool2d \(aten.max_pool2d.default\): cannot import its "
                                               r"arguments \(IndexError: list index out of range\)") as raised:
        import_torch(DilatedPool(), (torch.randn(2, 3, 8, 8),))
    assert (raised.value.file, raised.value.line) == (__file__, line_marked("# the surprised call"))
