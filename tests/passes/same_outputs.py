"""Shared checks for pass tests."""

from __future__ import annotations

import numpy as np

from rlxir.interpreter import interpret, random_feeds


def assert_same_outputs(before, after, bindings=None, seed=1):
    """`after` computes what `before` does on the same feeds (outputs compared by position)."""
    inputs, params = random_feeds(before, bindings=bindings, seed=seed)
    expected = interpret(before, inputs, params, bindings=bindings)
    actual = interpret(after, inputs, params, bindings=bindings)
    assert len(before.outputs) == len(after.outputs)
    for old, new in zip(before.outputs, after.outputs):
        np.testing.assert_allclose(actual[new], expected[old], rtol=1e-4, atol=1e-5, err_msg=f"output %{old}")
