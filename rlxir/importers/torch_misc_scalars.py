"""Reading a tensor's value as a Python number (``aten._local_scalar_dense``, ``aten.item``).

Export emits the read where a shape or an index comes from a tensor (``tensor_split`` at
indices held in a tensor, ``take`` of one element). The read is folded when the tensor is
known while importing (a buffer, or ops on buffers): the number becomes a constant of the
graph, as if the model had written it. A tensor computed at run time is refused: shapes or
control flow would depend on data, which a static rlx graph cannot express.
"""

from __future__ import annotations

from rlxir.importers.torch_ops import refuse
from rlxir.importers.torch_registry import Static, converter, op_key


@converter("aten._local_scalar_dense", "aten.item", fold=False)
def handle_local_scalar(ctx, node, args, kwargs):
    """The one element of a static tensor as a Python number (bool, int or float, as PyTorch's
    ``item`` gives it)."""
    tensor = args[0]
    if not isinstance(tensor, Static) or tensor.fake:
        refuse(f"{op_key(node.target)} of a tensor computed at run time: it reads the tensor's value as a Python "
               "number (shapes or control flow would depend on data)",
               "a number read from a constant or buffer (known while importing)")
    if tensor.tensor.numel() != 1:
        refuse(f"{op_key(node.target)} of a tensor of {tensor.tensor.numel()} elements", "a one-element tensor")
    return tensor.tensor.item()
