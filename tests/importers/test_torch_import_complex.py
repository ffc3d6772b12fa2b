"""Complex values on the PyTorch route (carried as real pairs [..., 2]) and the FFT family:
each model is exported with a dynamic batch dim, imported, interpreted and compared with
eager PyTorch (a complex output compared as its real view); and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rlxir.errors import RlxError  # noqa: E402
from rlxir.importers.torch import import_torch  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402


class Apply(torch.nn.Module):
    """forward(x[, y[, z]]) = function(x[, y[, z]])."""

    def __init__(self, function):
        super().__init__()
        self.function = function

    def forward(self, x, y=None, z=None):
        return self.function(*(item for item in (x, y, z) if item is not None))


def run(function, *args, dims=None):
    """The imported graph's outputs and eager PyTorch's (complex ones as their real view)."""
    module = Apply(function)
    imported = import_torch(module, args, dims=dims)
    with torch.no_grad():
        expected = module(*args)
    expected = [expected] if isinstance(expected, torch.Tensor) else list(expected)
    feeds = {value: arg.numpy() for value, arg in zip(imported.inputs.values(), args)}
    bindings = {"B": args[0].shape[0]} if dims is None else {}
    results = interpret(imported.graph, feeds, dict(imported.params), bindings)
    have = [results[value] for value in imported.outputs.values()]
    want = [(torch.view_as_real(item.resolve_conj()) if item.is_complex() else item).numpy() for item in expected]
    return imported, have, want


def assert_matches(function, *args, atol=1e-4, dims=None):
    imported, have, want = run(function, *args, dims=dims)
    assert len(have) == len(want)
    for got, expected in zip(have, want):
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=atol)
    return imported


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("shape", [(3, 8), (2, 5, 7)])
def test_fft_and_ifft_along_the_last_dim(norm, shape):
    torch.manual_seed(0)
    x = torch.randn(*shape)
    imported = assert_matches(lambda t: torch.fft.fft(t, norm=norm), x)
    assert str(imported.graph.type(next(iter(imported.outputs.values())))).endswith(", 2]")
    assert_matches(lambda t: torch.fft.ifft(torch.fft.fft(t) * 2.0, norm=norm), x)


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_real_transforms_over_several_dims(norm):
    """Over the batch dim too (a transformed dim is static: exported without symbols)."""
    torch.manual_seed(1)
    x = torch.randn(2, 6, 5)
    assert_matches(lambda t: torch.fft.rfft2(t, norm=norm), x)
    assert_matches(lambda t: torch.fft.rfftn(t, s=(4, 8), dim=(0, 2), norm=norm), x, dims=[None])
    assert_matches(lambda t: torch.fft.irfft2(torch.fft.rfft2(t), s=(6, 5), norm=norm), x)
    assert_matches(lambda t: torch.fft.hfft(t, n=9, norm=norm), x)
    assert_matches(lambda t: torch.fft.ihfftn(t, norm=norm), x, dims=[None])


def test_an_odd_length_round_trip_is_the_signal():
    torch.manual_seed(2)
    x = torch.randn(3, 7)
    _, have, _ = run(lambda t: torch.fft.irfft(torch.fft.rfft(t), n=7), x)
    np.testing.assert_allclose(have[0], x.numpy(), rtol=1e-5, atol=1e-5)


def test_complex_arithmetic_and_parts():
    torch.manual_seed(3)
    a, b, c = torch.randn(4, 5), torch.randn(4, 5), torch.rand(4, 5) + 0.5

    def arithmetic(re, im, size):
        z = torch.complex(re, im)
        w = torch.polar(size, im)
        q = (z * w - z.conj()) / (w + 1.0)
        return torch.view_as_real(q), q.abs(), q.angle(), torch.real(q), torch.imag(q)

    assert_matches(arithmetic, a, b, c)


def test_complex_layout_ops_keep_the_pair_dim_last():
    torch.manual_seed(4)
    x = torch.randn(3, 4, 6)

    def layout(t):
        z = torch.fft.fft(t)
        z = z.permute(0, 2, 1)[:, 1:5].reshape(3, -1)
        z = torch.cat([z, torch.nn.functional.pad(z, (1, 2))], dim=1)
        return z.unsqueeze(1).select(0, 2), torch.view_as_complex(torch.stack([t, -t], dim=-1)) * 2

    assert_matches(layout, x, dims=[None])


def test_stft_with_a_window():
    torch.manual_seed(5)
    x = torch.randn(2, 64)
    window = torch.hann_window(16)
    assert_matches(lambda t: torch.stft(t, 16, hop_length=4, window=window, return_complex=True), x)


def test_a_complex128_transform_is_refused():
    x = torch.randn(3, 8)
    with pytest.raises(RlxError, match="a torch.complex128 result"):
        import_torch(Apply(lambda t: torch.view_as_real(torch.fft.fft(t.double()))), (x,))


def test_a_transform_too_large_to_unroll_is_refused():
    x = torch.randn(2, 4096)
    with pytest.raises(RlxError, match="too large to unroll"):
        import_torch(Apply(torch.fft.fft), (x,))


def test_a_complex_graph_input_is_refused_with_the_way_around():
    z = torch.randn(3, 4, dtype=torch.complex64)
    with pytest.raises(RlxError, match="complex64 graph input"):
        import_torch(Apply(lambda t: torch.view_as_real(t * 2)), (z,))


def test_an_op_without_a_pair_form_refuses_a_complex_operand_by_name():
    x = torch.randn(3, 8)
    with pytest.raises(RlxError, match="aten.exp of a complex value"):
        import_torch(Apply(lambda t: torch.view_as_real(torch.exp(torch.fft.fft(t)))), (x,))
