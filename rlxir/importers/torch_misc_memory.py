"""Ops on a tensor's memory rather than its values: ``resize`` (``resize_as_`` after export)
and ``hash_tensor``.

``resize`` keeps a contiguous tensor's first elements in the new shape: the same number of
elements is a reshape, fewer a slice of the flattened tensor. More elements are refused: the
added ones are uninitialized memory, which no graph value reproduces. ``hash_tensor`` is
refused: it XORs the bit patterns of the elements into a uint64, and the IR has neither
bitwise ops on floats nor a uint64 dtype.
"""

from __future__ import annotations

from rlxir.importers.torch_ops import op, operand, refuse, reshape, result_dtype, shape_of, static_dim
from rlxir.importers.torch_registry import converter


@converter("aten.resize")
def handle_resize(ctx, node, args, kwargs):
    """resize(x, size): x's first prod(size) elements (row-major) in shape `size`."""
    x = operand(ctx, args[0], result_dtype(node), node.name)
    size = tuple(args[1])
    have = 1
    for dim in shape_of(ctx, x):
        have *= static_dim(dim, "a resize")
    want = 1
    for dim in size:
        want *= static_dim(dim, "a resize")
    if want > have:
        refuse(f"resize from {have} to {want} elements: the added elements are uninitialized memory",
               "a resize to at most as many elements as the tensor has")
    if want == have:
        return reshape(ctx, x, size, node.name)
    flat = reshape(ctx, x, (have,), f"{node.name}.flat")
    kept = op(ctx, "slice", [flat], {"axis": 0, "start": 0, "len": want}, hint=f"{node.name}.kept")
    return reshape(ctx, kept, size, node.name)


@converter("aten.hash_tensor", fold=False)
def handle_hash_tensor(ctx, node, args, kwargs):
    refuse("aten.hash_tensor cannot be imported: it XORs the elements' bit patterns into a uint64 (the IR has no "
           "bitwise ops on floats and no uint64 dtype)", "an op the IR can express")
