"""aten.linalg_vector_norm kept whole (as PyTorch releases without a Core ATen decomposition
for it leave it), imported by its own converter and run against eager PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rlxir.importers.torch import import_exported  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402


class Norm(torch.nn.Module):
    def __init__(self, order, dim, keepdim):
        super().__init__()
        self.order, self.dim, self.keepdim = order, dim, keepdim

    def forward(self, x):
        return torch.linalg.vector_norm(x, self.order, self.dim, self.keepdim)


@pytest.mark.parametrize("order, dim, keepdim", [(2, -1, False), (1, (0, 2), True), (float("inf"), None, False),
                                                 (float("-inf"), 1, False), (0, -1, True), (3, 1, False),
                                                 (0.5, None, True)])
def test_each_order_matches_eager(order, dim, keepdim):
    module = Norm(order, dim, keepdim)
    x = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(0))
    x[0, 1, 2] = 0.0
    program = torch.export.export(module, (x,), strict=False)
    targets = {str(node.target) for node in program.graph.nodes if node.op == "call_function"}
    assert any("linalg_vector_norm" in target for target in targets)  # kept whole: the converter runs
    imported = import_exported(program, "norm", {})
    got = interpret(imported.graph, {next(iter(imported.inputs.values())): x.numpy()}, dict(imported.params))
    want = module(x).numpy()
    np.testing.assert_allclose(got[next(iter(imported.outputs.values()))], want, rtol=1e-5, atol=1e-6)


def test_normalize_through_the_whole_route_matches_eager():
    from rlxir.importers.torch import import_torch

    module = torch.nn.Sequential(torch.nn.Linear(8, 8))
    x = torch.randn(2, 8, generator=torch.Generator().manual_seed(1))

    class Normalized(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.normalize(module(x), dim=-1)

    imported = import_torch(Normalized(), (x,))
    got = interpret(imported.graph, {next(iter(imported.inputs.values())): x.numpy()}, dict(imported.params), {"B": 2})
    np.testing.assert_allclose(got[next(iter(imported.outputs.values()))], Normalized()(x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
