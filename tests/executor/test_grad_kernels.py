"""The backward ops' kernels (rlxir.executor.grad_kernels) give their NumPy references' values:
the selective scan's gradients bit for bit (its states recomputed a segment at a time from
checkpoints), the convolution gradients within float32 rounding."""

from __future__ import annotations

import numpy as np
import pytest

from rlxir.autodiff.backward_ops import conv2d_grad_input, conv2d_grad_weight, selective_scan_grads
from rlxir.executor.grad_kernels import GRAD_KERNELS


@pytest.mark.parametrize("steps", [1, 7, 16, 37])
def test_the_scan_gradient_equals_the_reference_bit_for_bit(steps):
    rng = np.random.default_rng(steps)
    batch, hidden, state = 2, 5, 3
    x = rng.standard_normal((batch, steps, hidden)).astype(np.float32)
    delta = rng.uniform(0, 0.5, (batch, steps, hidden)).astype(np.float32)
    a = -rng.uniform(0.1, 1, (hidden, state)).astype(np.float32)
    bm, c = (rng.standard_normal((batch, steps, state)).astype(np.float32) for _ in range(2))
    grad = rng.standard_normal((batch, steps, hidden)).astype(np.float32)
    expected = selective_scan_grads(x, delta, a, bm, c, grad)
    for operand in range(5):
        got = GRAD_KERNELS["selective_scan_grad"](np, [x, delta, a, bm, c, grad], {"operand": operand}, None)
        assert np.array_equal(got, expected[operand]), operand


@pytest.mark.parametrize("groups, stride, padding, dilation", [(1, (1, 1), (0, 0, 0, 0), (1, 1)),
                                                                (2, (2, 1), (1, 0, 2, 1), (1, 2)),
                                                                (4, (1, 1), (0, 3, 0, 0), (1, 1))])
def test_the_convolution_gradients_equal_the_references(groups, stride, padding, dilation):
    rng = np.random.default_rng(groups)
    x = rng.standard_normal((2, 4, 9, 8)).astype(np.float32)
    weight = rng.standard_normal((4, 4 // groups, 2, 3)).astype(np.float32)
    rows = (9 + padding[0] + padding[2] - dilation[0] * 1 - 1) // stride[0] + 1
    cols = (8 + padding[1] + padding[3] - dilation[1] * 2 - 1) // stride[1] + 1
    grad = rng.standard_normal((2, 4, rows, cols)).astype(np.float32)
    attrs = {"input_shape": [2, 4, 9, 8], "kernel": [2, 3], "stride": stride, "padding": padding,
             "dilation": dilation, "groups": groups}
    np.testing.assert_allclose(GRAD_KERNELS["conv2d_grad_input"](np, [grad, weight], attrs, None),
                               conv2d_grad_input(grad, weight, (2, 4, 9, 8), stride, padding, dilation, groups),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(GRAD_KERNELS["conv2d_grad_weight"](np, [x, grad], attrs, None),
                               conv2d_grad_weight(x, grad, (2, 3), stride, padding, dilation, groups),
                               rtol=1e-6, atol=1e-6)
