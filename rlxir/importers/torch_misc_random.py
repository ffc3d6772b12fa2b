"""Random ops the shared table (`rlxir.importers.torch_index`'s refusals) does not name,
refused with the same reason: an rlx graph is deterministic, and a draw from PyTorch's
generator at import time would freeze one sample into the graph as if it were the op.
"""

from __future__ import annotations

from rlxir.importers.torch_ops import refuse
from rlxir.importers.torch_registry import op_key, register

RANDOM = ("aten.cauchy", "aten.geometric", "aten.log_normal", "aten.normal_functional", "aten.random")
"""In-place random fills (in their functional forms after export), each a draw per element."""


def _refuse_random(ctx, node, args, kwargs):
    refuse(f"{op_key(node.target)} cannot be imported: it draws random numbers (an rlx graph is deterministic)",
           "an op the IR can express")


for _key in RANDOM:
    register(_key, _refuse_random, fold=False)
