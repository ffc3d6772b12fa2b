"""Comparing a rewritten graph's outputs with the original's, as far as rounding allows.

A rewrite (unfuse, fuse, lower) changes where the rounding happens, and on most graphs that
moves the outputs by a few units in the last place: a fixed tolerance holds. A random graph
now and then computes ``x + residual`` that cancels to a few units in the last place and
then normalises it: every implementation of that graph in float32 gives a different answer
there, by up to its whole size. `assert_close_within_rounding` accepts such a difference only
when the original graph itself moves as far under one more rounding of its values
(`rlxir.interpreter.interpret_rounded_again`), with the factor the arena check uses
(`rlxir.executor.check.SENSITIVITY_FACTOR`); a difference the graph's conditioning does not
explain still fails, with both figures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from rlxir.executor.check import SENSITIVITY_FACTOR, max_change
from rlxir.ir.graph import Graph
from rlxir.interpreter import interpret_rounded_again


def assert_close_within_rounding(graph: Graph, feeds: tuple[Mapping, Mapping], expected: Sequence[np.ndarray],
                                 actual: Sequence[np.ndarray], rtol: float, atol: float,
                                 bindings: Mapping[str, int] | None = None) -> None:
    """Each of `actual` (a rewritten graph's outputs, in output order) is within
    (`rtol`, `atol`) of `expected` (`graph`'s, on `feeds` = (inputs, params)), or within
    `SENSITIVITY_FACTOR` times how far `graph`'s own output moves under one more rounding,
    with NaN and inf where `expected` has them."""
    assert len(actual) == len(expected)
    moved: list[np.ndarray] | None = None
    for position, (want, got) in enumerate(zip(expected, actual)):
        assert got.shape == want.shape, f"output {position}: shape {got.shape}, the original's {want.shape}"
        if np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
            continue
        if moved is None:
            inputs, params = feeds
            results = interpret_rounded_again(graph, inputs, params, bindings)
            moved = [results[name] for name in graph.outputs]
        nonfinite = ~np.isfinite(want)
        np.testing.assert_array_equal(got[nonfinite], want[nonfinite],
                                      err_msg=f"output {position}: NaN or inf other than the original's")
        assert np.isfinite(got[~nonfinite]).all(), f"output {position}: NaN or inf where the original is finite"
        error, sensitivity = max_change(want, got), max_change(want, moved[position])
        assert error <= SENSITIVITY_FACTOR * sensitivity, (
            f"output {position} of graph {graph.name}: max abs difference {error:.3g} beyond rtol {rtol:g}, "
            f"atol {atol:g}, and beyond {SENSITIVITY_FACTOR:g} x the {sensitivity:.3g} the original moves by under "
            f"one more rounding of its values")
