"""An index outside the table is one located error on every route that gathers."""

from __future__ import annotations

import numpy as np
import pytest

import rlxir
from rlxir.autodiff.backward_ops import gather_grad
from rlxir.executor.kernels import KERNELS
from rlxir.errors import RlxError

TEXT = """\
graph g(B) {
  input %i : i32[B]
  param %t : f32[5, 3]
  %y = gather(%t, %i)
  output %y
}
"""


@pytest.mark.parametrize("bad, crossed", [([0, 5], 5), ([-1, 2], -1)])
def test_the_arena_run_names_the_index_and_the_table_dim(bad, crossed):
    compiled = rlxir.compile(rlxir.parse(TEXT).main, "cpu", {"B": 2})
    feeds = {"i": np.array(bad, dtype=np.int32)}
    with pytest.raises(RlxError, match=rf"gather index {crossed} is out of range for a table dim of 5"):
        rlxir.execute(compiled, feeds)
    with pytest.raises(RlxError, match=rf"gather index {crossed} is out of range for a table dim of 5"):
        rlxir.interpret(rlxir.parse(TEXT).main, feeds, bindings={"B": 2})


def test_the_gradient_scatter_checks_the_same_bounds():
    grad = np.ones((2, 3), dtype=np.float32)
    with pytest.raises(RlxError, match="gather_grad index 4 is out of range for a table dim of 4"):
        gather_grad(grad, np.array([1, 4]), 0, (4, 3))
    out = np.empty((4, 3), dtype=np.float32)
    with pytest.raises(RlxError, match="gather_grad index -2 is out of range for a table dim of 4"):
        KERNELS["gather_grad"](np, (grad, np.array([-2, 0])), {"axis": 0}, out)
    table = gather_grad(grad, np.array([1, 1]), 0, (4, 3))
    np.testing.assert_array_equal(table[1], [2, 2, 2])
