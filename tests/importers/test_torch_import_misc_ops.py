"""The PyTorch importer's miscellaneous ops, each on a tiny module exported here and compared
with eager PyTorch on the interpreter: histograms, numbers read from static tensors,
searchsorted with a sorter; and what stays refused, with its reason."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rlxir.errors import RlxError  # noqa: E402
from rlxir.importers.torch import import_torch  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402


class Apply(torch.nn.Module):
    """forward(a[, b]) = function(a[, b], *buffers): `buffers` are known while importing."""

    def __init__(self, function, *buffers):
        super().__init__()
        self.function = function
        for index, buffer in enumerate(buffers):
            self.register_buffer(f"b{index}", buffer)
        self.count = len(buffers)

    def forward(self, a, b=None):
        tensors = [tensor for tensor in (a, b) if tensor is not None]
        return self.function(*tensors, *(getattr(self, f"b{index}") for index in range(self.count)))


def matches(function, args, buffers=(), dims=None, rtol=1e-5, atol=1e-5):
    """Import `function` over `args` and compare every output with PyTorch's."""
    module = Apply(function, *buffers).eval()
    imported = import_torch(module, args, dims=dims or [None] * len(args))
    with torch.no_grad():
        expected = torch.utils._pytree.tree_leaves(module(*args))
    feeds = {value: arg.numpy() for value, arg in zip(imported.inputs.values(), args)}
    bindings = {"B": args[0].shape[0]} if dims else None
    results = interpret(imported.graph, feeds, dict(imported.params), bindings=bindings)
    outputs = imported.graph.outputs[len(imported.graph.outputs) - len(expected):]
    for value, want in zip(outputs, expected):
        np.testing.assert_allclose(results[value], want.numpy(), rtol=rtol, atol=atol, equal_nan=True)
    return imported


def values(*shape, low=-3.0, high=3.0, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(*shape, generator=generator) * (high - low) + low


# --- histograms ------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 4, 6)])
@pytest.mark.parametrize("bounds", [(0, 0), (-1.0, 2.0), (0.5, 0.5)])
def test_histc(shape, bounds):
    """Bounds given, read from the data (min == max), and equal non-zero bounds (data too)."""
    matches(lambda x: torch.histc(x, bins=7, min=bounds[0], max=bounds[1]), [values(*shape)])


def test_histc_counts_the_last_edge_and_skips_outside():
    x = torch.tensor([-2.0, -1.0, 0.0, 0.5, 1.0, 1.5, 3.0])
    matches(lambda x: torch.histc(x, bins=4, min=-1, max=1.5), [x])


def test_histc_of_constant_data_widens_by_one():
    matches(lambda x: torch.histc(x, bins=5), [torch.full((4,), 2.0)])


@pytest.mark.parametrize("density", [False, True])
def test_histogram_of_a_bin_count(density):
    matches(lambda x: torch.histogram(x, bins=6, density=density), [values(4, 5)])


def test_histogram_with_range_and_weight():
    matches(lambda x, w: torch.histogram(x, bins=5, range=(-2.0, 2.0), weight=w, density=True),
            [values(3, 6), values(3, 6, low=0.0, high=1.0, seed=1)])


def test_histogram_of_edges_in_a_tensor():
    matches(lambda x, edges: torch.histogram(x, edges), [values(20), torch.tensor([-2.0, -0.5, 0.0, 1.0, 2.5])])


@pytest.mark.parametrize("density", [False, True])
def test_histogramdd(density):
    matches(lambda x: torch.histogramdd(x, bins=[3, 4], density=density), [values(2, 10, 2)])


def test_histogramdd_of_edge_tensors_and_weight():
    edges = [torch.tensor([-3.0, 0.0, 3.0]), torch.tensor([-1.0, 0.0, 1.0, 2.0])]
    matches(lambda x, w: torch.histogramdd(x, bins=edges, weight=w), [values(12, 2), values(12, seed=3)])


def test_histogram_of_a_symbolic_batch_is_refused():
    module = Apply(lambda x: torch.histc(x, bins=4, min=-1, max=1)).eval()
    with pytest.raises(RlxError, match="a histogram of the symbolic dim"):
        import_torch(module, [values(3, 4)])


# --- numbers read from static tensors ------------------------------------------------------
def test_tensor_split_at_indices_in_a_buffer():
    """Export reads each index with _local_scalar_dense; a buffer's are known while importing."""
    matches(lambda x, indices: torch.tensor_split(x, indices, dim=1), [values(3, 8)], [torch.tensor([1, 4, 6])])


def test_take_of_one_element_in_a_buffer():
    matches(lambda x, index: torch.take(x, index), [values(3, 4)], [torch.tensor(5)])


def test_a_number_read_from_a_run_time_tensor_is_refused():
    """take of one element at an index that is an input: the index is read as a number."""
    module = Apply(lambda x, index: torch.take(x, index)).eval()
    with pytest.raises(RlxError, match="_local_scalar_dense of a tensor computed at run time"):
        import_torch(module, [values(3, 4), torch.tensor(5)], dims=[None, None])


# --- searchsorted -------------------------------------------------------------------------------
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_with_a_sorter(right):
    """The sorter puts the sequence in order; ties (2.0) tell left from right."""
    unsorted = torch.tensor([[3.0, -1.0, 2.0, 0.5], [2.0, 9.0, -4.0, 1.0]])
    sorter = torch.argsort(unsorted, dim=-1)
    queried = torch.tensor([[2.0, -2.0, 0.5], [1.0, 10.0, 2.0]])
    matches(lambda x, sequence, order: torch.searchsorted(sequence, x, right=right, sorter=order), [queried],
            [unsorted, sorter])


def test_searchsorted_with_a_sorter_over_a_batch():
    unsorted = torch.tensor([3.0, -1.0, 2.0, 0.5, 7.0])
    matches(lambda x, sequence, order: torch.searchsorted(sequence, x, sorter=order), [values(4, 3)],
            [unsorted, torch.argsort(unsorted)], dims=[{0: "B"}])


# --- chunked linear + cross entropy -----------------------------------------------------------
def chunked():
    from torch.nn.modules.linear_cross_entropy_options import LinearCrossEntropyOptions

    return LinearCrossEntropyOptions(batch_chunk_size=2)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_chunked_linear_cross_entropy(reduction):
    """Class weights, a bias and an ignored target (2) in a batch of 6."""
    target = torch.tensor([0, 2, 4, 1, 2, 3])
    matches(lambda x, linear_weight, bias, weight, target: torch.nn.functional.linear_cross_entropy(
        x, linear_weight, target, linear_bias=bias, weight=weight, reduction=reduction, ignore_index=2,
        options=chunked()), [values(6, 3)], [values(5, 3, seed=1), values(5, seed=2), values(5, low=0.5, seed=3),
                                             target])


@pytest.mark.parametrize("batch", [1, 2, 5])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_chunked_linear_cross_entropy_over_batches(batch, reduction):
    """Batches smaller than, equal to and larger than a chunk (export cannot trace the chunked
    op over a symbolic batch: its chunk size would be symbolic)."""
    matches(lambda x, linear_weight, target: torch.nn.functional.linear_cross_entropy(
        x, linear_weight, target[:x.shape[0]], reduction=reduction, options=chunked()),
        [values(batch, 3, high=30.0)], [values(7, 3, seed=1), torch.tensor([6, 0, 3, 1, 5])])


def test_chunked_linear_cross_entropy_of_probabilities():
    probabilities = torch.softmax(values(4, 5, seed=4), dim=1)
    matches(lambda x, target, linear_weight: torch.nn.functional.linear_cross_entropy(
        x, linear_weight, target, options=chunked()), [values(4, 3), probabilities], [values(5, 3, seed=1)])


def test_chunked_linear_cross_entropy_of_one_sample():
    matches(lambda x, linear_weight, target: torch.nn.functional.linear_cross_entropy(
        x, linear_weight, target, reduction="none", options=chunked()), [values(3)], [values(4, 3), torch.tensor(2)])


# --- index_put through a static boolean mask ------------------------------------------------
@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_through_a_mask_in_a_buffer(accumulate):
    """A [3, 4] mask over x's two leading axes, one row of values per set element."""
    mask = torch.tensor([[True, False, True, False], [False, False, False, True], [True, True, False, False]])
    matches(lambda x, rows, mask: torch.ops.aten.index_put(x, [mask], rows, accumulate), [values(3, 4, 2),
                                                                                          values(5, 2, seed=1)],
            [mask])


def test_index_put_through_a_mask_after_an_axis():
    mask = torch.tensor([False, True, True, False, True])
    matches(lambda x, column, mask: torch.ops.aten.index_put(x, [None, mask], column), [values(4, 5), values(4, 1)],
            [mask])


def test_index_put_through_a_run_time_mask_of_several_values_is_refused():
    module = Apply(lambda x, values: torch.ops.aten.index_put(x, [x > 0], values)).eval()
    with pytest.raises(RlxError, match="boolean mask of several values"):
        import_torch(module, [values(6), values(6)], dims=[None, None])


# --- mode, resize, hash_tensor ------------------------------------------------------------------
@pytest.mark.parametrize("dim, keepdim", [(-1, False), (1, True), (0, False)])
def test_mode_of_repeated_values(dim, keepdim):
    """Rows with ties of frequency (the smaller value wins) and repeats (the last position)."""
    x = torch.randint(0, 4, (3, 7, 5), generator=torch.Generator().manual_seed(0)).float()
    matches(lambda x: torch.mode(x, dim, keepdim), [x])


def test_mode_of_distinct_values_over_a_batch():
    matches(lambda x: torch.mode(x, 1), [values(4, 6)], dims=[{0: "B"}])


@pytest.mark.parametrize("size", [(3, 4), (5,)])
def test_resize_keeps_the_first_elements(size):
    matches(lambda x: torch.ops.aten.resize(x.clone(), size), [values(3, 4)])


def test_resize_to_more_elements_is_refused():
    module = Apply(lambda x: torch.ops.aten.resize(x.clone(), (5, 4))).eval()
    with pytest.raises(RlxError, match="uninitialized memory"):
        import_torch(module, [values(3, 4)], dims=[None])


def test_hash_tensor_of_a_run_time_tensor_is_computed_from_its_bits():
    module = Apply(lambda x: torch.hash_tensor(x, 0)).eval()
    x = values(3, 4)
    imported = import_torch(module, [x], dims=[None])
    have = interpret(imported.graph, {imported.graph.inputs()[0]: x.numpy()}, imported.params)
    np.testing.assert_array_equal(list(have.values())[0], torch.hash_tensor(x, 0).numpy())


# --- max_pool2d_with_indices_backward ------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 3, 7, 9), (3, 6, 6)])
@pytest.mark.parametrize("geometry", [dict(kernel_size=3, stride=2, ceil_mode=True),
                                      dict(kernel_size=2, stride=1, padding=1, dilation=2),
                                      dict(kernel_size=(2, 3), stride=(1, 2))])
def test_max_pool2d_backward_adds_at_the_indices(shape, geometry):
    """Overlapping windows (stride below the kernel) send several gradients to one input."""
    def backward(x, grad_scale):
        pooled, indices = torch.nn.functional.max_pool2d(x, return_indices=True, **geometry)
        grad = pooled * grad_scale
        return torch.ops.aten.max_pool2d_with_indices_backward(
            grad, x, geometry["kernel_size"], geometry["stride"], geometry.get("padding", 0),
            geometry.get("dilation", 1), geometry.get("ceil_mode", False), indices)

    matches(backward, [values(*shape), values(1, low=0.5, high=2.0, seed=5)])


# --- grid_sampler_3d ---------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_3d(mode, padding_mode, align_corners):
    """Grid points inside and outside [-1, 1] over a volume of unequal sides."""
    matches(lambda x, grid: torch.nn.functional.grid_sample(x, grid, mode=mode, padding_mode=padding_mode,
                                                            align_corners=align_corners),
            [values(2, 3, 4, 5, 6), values(2, 3, 2, 4, 3, low=-1.3, high=1.3, seed=1)])


def test_grid_sample_3d_over_a_batch():
    matches(lambda x, grid: torch.nn.functional.grid_sample(x, grid, align_corners=False),
            [values(3, 2, 3, 4, 5), values(3, 2, 2, 2, 3, low=-1.0, high=1.0, seed=2)], dims=[{0: "B"}, {0: "B"}])


def test_grid_sample_3d_reflection_is_refused():
    module = Apply(lambda x, grid: torch.nn.functional.grid_sample(x, grid, padding_mode="reflection")).eval()
    with pytest.raises(RlxError, match="padding 2"):
        import_torch(module, [values(1, 1, 2, 3, 4), values(1, 2, 2, 2, 3)], dims=[None, None])


# --- antialiased bilinear resize ---------------------------------------------------------------
@pytest.mark.parametrize("size", [(3, 7), (5, 5), (13, 30)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_antialiased_bilinear_resize(size, align_corners):
    """Shrinking (the filter widens), keeping and growing, each side apart."""
    matches(lambda x: torch.nn.functional.interpolate(x, size=size, mode="bilinear", antialias=True,
                                                      align_corners=align_corners), [values(2, 3, 10, 20)])


def test_antialiased_bilinear_resize_by_factors_over_a_batch():
    matches(lambda x: torch.nn.functional.interpolate(x, scale_factor=(0.45, 1.7), mode="bilinear", antialias=True),
            [values(3, 2, 11, 9)], dims=[{0: "B"}])


# --- random fills ----------------------------------------------------------------------------------
@pytest.mark.parametrize("fill", [lambda x: x.clone().cauchy_(), lambda x: x.clone().log_normal_(),
                                  lambda x: x.clone().geometric_(0.3)])
def test_random_fills_are_refused(fill):
    module = Apply(fill).eval()
    with pytest.raises(RlxError, match="draws random numbers"):
        import_torch(module, [values(3, 4)], dims=[None])


# --- fractional max pooling with static samples -----------------------------------------------
@pytest.mark.parametrize("shape, kernel, output_size", [((2, 3, 9, 11), 3, (4, 5)), ((3, 8, 7), (2, 3), (5, 3)),
                                                         ((2, 2, 6, 7, 8), 2, (3, 4, 5))])
def test_fractional_max_pool_with_samples_in_a_buffer(shape, kernel, output_size):
    """Values and indices; each plane's own samples place its windows."""
    spatial = len(output_size)
    pool = torch.nn.functional.fractional_max_pool2d if spatial == 2 else torch.nn.functional.fractional_max_pool3d
    planes = (shape[0], shape[1]) if len(shape) == spatial + 2 else (1, shape[0])
    samples = torch.rand(*planes, spatial, generator=torch.Generator().manual_seed(7))
    matches(lambda x, samples: pool(x, kernel, output_size=output_size, return_indices=True,
                                    _random_samples=samples), [values(*shape)], [samples])


def test_fractional_max_pool_with_drawn_samples_is_refused():
    module = Apply(lambda x: torch.nn.functional.fractional_max_pool2d(x, 2, output_size=(3, 3))).eval()
    with pytest.raises(RlxError, match="random numbers"):
        import_torch(module, [values(1, 2, 7, 7)], dims=[None])
