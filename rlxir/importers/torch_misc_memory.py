"""Ops on a tensor's memory rather than its values: ``resize`` (``resize_as_`` after export)
and ``hash_tensor``.

``resize`` keeps a contiguous tensor's first elements in the new shape: the same number of
elements is a reshape, fewer a slice of the flattened tensor. More elements are refused: the
added ones are uninitialized memory, which no graph value reproduces. ``hash_tensor`` is the
XOR of the elements' 64-bit patterns as a u64: each float widened to f64 (an integer or bool
to i64, sign-extended), read as u64 by ``bitcast``, then ``reduce_xor`` over the given dims
(every dim when none is given), as PyTorch's mode 0 (its only mode).
"""

from __future__ import annotations

from rlxir.dtypes import DType
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
    """hash_tensor(x, dim=[], keepdim=False, *, mode=0): XOR of the 64-bit patterns over dim."""
    dims = args[1] if len(args) > 1 else kwargs.get("dim", [])
    keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
    if kwargs.get("mode", 0) != 0:
        refuse(f"hash_tensor mode {kwargs['mode']}", "mode 0 (XOR of the bit patterns)")
    x = ctx.value(args[0])
    dtype = ctx.builder.type(x).dtype
    if dtype.is_complex:
        refuse("hash_tensor of a complex value", "a real tensor")
    wide = DType.f64 if dtype.is_float else DType.u64 if dtype is DType.u64 else DType.i64
    bits = op(ctx, "bitcast", [operand(ctx, x, wide, f"{node.name}.wide")], {"to": DType.u64}, hint=f"{node.name}.bits")
    rank = len(shape_of(ctx, bits))
    if rank == 0:  # one element: its own pattern (dim 0 or -1 of a scalar names the scalar)
        return bits
    axes = sorted({axis % rank for axis in ([dims] if isinstance(dims, int) else dims)}) or list(range(rank))
    return op(ctx, "reduce_xor", [bits], {"axes": axes, "keepdims": bool(keepdim)}, hint=node.name)
