"""ONNX sequence ops on sequences known while importing: the IR has no sequence type, so a
sequence is a static list of tensors (each an rlx value or a static array) held by the
import, and only the tensors taken out of it (SequenceAt, ConcatFromSequence) or its length
(SequenceLength, a static int64) reach the graph.

SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceErase, SequenceAt,
SequenceLength, ConcatFromSequence (``axis``, ``new_axis``), SplitToSequence (``split``
absent, a scalar chunk size or sizes; ``axis``; ``keepdims``) and SequenceMap (its body
unrolled once per element). Positions must be known while importing (negative ones count
from the end), and a split axis must be static. A sequence that is a graph output, or that
an op needs as a tensor, is refused: the IR has no sequence type.
"""

from __future__ import annotations

import numpy as np

from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_control import StaticSequence, as_value, holding, refuse_missing_ops, result, run_subgraph
from rlxir.importers.onnx_loop import stack
from rlxir.importers.onnx_ops import hint, optional_input, static_input, static_ints
from rlxir.importers.onnx_registry import register
from rlxir.ops import normalize_axis


def sequence_of(ctx, node, index: int) -> StaticSequence:
    name = optional_input(node, index)
    static = ctx.static(name) if name is not None else None
    if static is None or static.dtype != object or static.shape != () or not isinstance(static.item(),
                                                                                          StaticSequence):
        raise UnsupportedModel(f"its input {index} is not a sequence known while importing",
                               expected="a sequence built by sequence ops from tensors")
    return static.item()


def _made(ctx, name: str, items) -> np.ndarray:
    """The sequence of `items` as output `name`; a graph output cannot be a sequence."""
    if name in ctx.graph_outputs:
        raise UnsupportedModel(f"the sequence {name!r} is a graph output, and the IR has no sequence type",
                               expected="graph outputs that are tensors")
    return holding(StaticSequence(tuple(items)))


def _position(ctx, node, index: int, count: int, default: int, inserting: bool = False) -> int:
    """The static position input `index` (or `default` when absent) in 0..count-1 (0..count
    when inserting), negative counted from the end."""
    if optional_input(node, index) is None:
        return default
    position = static_ints(ctx, node, index, "position")[0]
    if not isinstance(position, int):
        raise UnsupportedModel(f"a symbolic position {position}", expected="a static position")
    upper = count + 1 if inserting else count
    wrapped = position + count if position < 0 else position
    if not 0 <= wrapped < upper:
        raise UnsupportedModel(f"position {position} in a sequence of {count} tensor(s)",
                               expected=f"a position in [-{count}, {upper - 1}]")
    return wrapped


# --- building and reading --------------------------------------------------------------
def convert_sequence_empty(ctx, node, attrs):
    return [_made(ctx, node.output[0], ())]


def convert_sequence_construct(ctx, node, attrs):
    return [_made(ctx, node.output[0], [result(ctx, name) for name in node.input if name])]


def convert_sequence_insert(ctx, node, attrs):
    items = list(sequence_of(ctx, node, 0).items)
    position = _position(ctx, node, 2, len(items), len(items), inserting=True)
    items.insert(position, result(ctx, node.input[1]))
    return [_made(ctx, node.output[0], items)]


def convert_sequence_erase(ctx, node, attrs):
    items = list(sequence_of(ctx, node, 0).items)
    if not items:
        raise UnsupportedModel("SequenceErase on an empty sequence", expected="a sequence with a tensor to erase")
    del items[_position(ctx, node, 1, len(items), len(items) - 1)]
    return [_made(ctx, node.output[0], items)]


def convert_sequence_at(ctx, node, attrs):
    items = sequence_of(ctx, node, 0).items
    if optional_input(node, 1) is None:
        raise UnsupportedModel("SequenceAt without a position", expected="a position input")
    return [items[_position(ctx, node, 1, len(items), 0)]]


def convert_sequence_length(ctx, node, attrs):
    return [np.array(len(sequence_of(ctx, node, 0).items), np.int64)]


def convert_concat_from_sequence(ctx, node, attrs):
    items = sequence_of(ctx, node, 0).items
    if not items:
        raise UnsupportedModel("ConcatFromSequence of an empty sequence", expected="at least one tensor")
    axis, new_axis = int(attrs["axis"]), bool(attrs.get("new_axis", 0))
    rank = ctx.builder.type(items[0]).rank if isinstance(items[0], str) else np.ndim(items[0])
    axis = normalize_axis(axis, rank + 1 if new_axis else rank)
    if new_axis:
        return [stack(ctx, list(items), axis, hint(node))]
    if all(not isinstance(item, str) for item in items):
        return [np.concatenate(items, axis=axis)]
    values = [as_value(ctx, item, f"{hint(node)}.{index}") for index, item in enumerate(items)]
    return [values[0] if len(values) == 1 else ctx.builder.op("concat", values, {"axis": axis}, hint=hint(node))]


def convert_split_to_sequence(ctx, node, attrs):
    x = result(ctx, node.input[0])
    shape = ctx.builder.type(x).shape if isinstance(x, str) else np.shape(x)
    axis = normalize_axis(int(attrs.get("axis", 0)), len(shape))
    length = shape[axis]
    if not isinstance(length, (int, np.integer)):
        raise UnsupportedModel(f"a split axis of length {length}", expected="a static split axis")
    sizes, squeeze = _split_sizes(ctx, node, int(length), bool(attrs.get("keepdims", 1)))
    items, start = [], 0
    for index, size in enumerate(sizes):
        items.append(_chunk(ctx, x, axis, start, size, squeeze, f"{hint(node)}.{index}"))
        start += size
    return [_made(ctx, node.output[0], items)]


def _split_sizes(ctx, node, length: int, keepdims: bool) -> tuple[list[int], bool]:
    """(the chunk sizes, whether the split axis is dropped): without `split`, chunks of one
    (dropped unless keepdims); a scalar `split` is a chunk size (the last chunk smaller)."""
    if optional_input(node, 1) is None:
        return [1] * length, not keepdims
    split = static_input(ctx, node, 1, "split")
    sizes = static_ints(ctx, node, 1, "split")
    if any(not isinstance(size, int) or size < 0 for size in sizes):
        raise UnsupportedModel(f"split {sizes}", expected="static non-negative sizes")
    if np.ndim(split) == 0:
        chunk = sizes[0]
        if chunk < 1:
            raise UnsupportedModel(f"a chunk size of {chunk}", expected="a positive chunk size")
        return [chunk] * (length // chunk) + ([length % chunk] if length % chunk else []), False
    if sum(sizes) != length:
        raise UnsupportedModel(f"split sizes {sizes} on an axis of length {length}", expected=f"sizes summing to {length}")
    return sizes, False


def _chunk(ctx, x, axis: int, start: int, size: int, squeeze: bool, name: str):
    if not isinstance(x, str):
        part = np.take(x, range(start, start + size), axis=axis)
        return np.ascontiguousarray(np.squeeze(part, axis=axis) if squeeze else part)
    part = ctx.builder.op("slice", [x], {"axis": axis, "start": start, "len": size}, hint=name)
    if not squeeze:
        return part
    kept = tuple(dim for position, dim in enumerate(ctx.builder.type(part).shape) if position != axis)
    return ctx.builder.op("reshape", [part], {"shape": kept}, hint=f"{name}.squeezed")


# --- SequenceMap -----------------------------------------------------------------------
def convert_sequence_map(ctx, node, attrs):
    """The body once per element: sequence inputs give their element, tensors themselves."""
    body = attrs["body"]
    refuse_missing_ops(body, "body")
    sequences = {index: sequence_of(ctx, node, index) for index, name in enumerate(node.input)
                 if name and _holds_sequence(ctx, name)}
    counts = {len(sequence.items) for sequence in sequences.values()}
    if len(counts) != 1:
        raise UnsupportedModel(f"sequences of lengths {sorted(counts)}", expected="sequences of one length")
    per_output: list[list] = [[] for _ in body.output]
    for element in range(counts.pop()):
        bound = [sequences[index].items[element] if index in sequences else result(ctx, name)
                 for index, name in enumerate(node.input)]
        for collected, value in zip(per_output, run_subgraph(ctx, body, bound)):
            collected.append(value)
    return [_made(ctx, output, collected) for output, collected in zip(node.output, per_output)]


def _holds_sequence(ctx, name: str) -> bool:
    static = ctx.static(name)
    return static is not None and static.dtype == object and static.shape == () and \
        isinstance(static.item(), StaticSequence)


register({
    "SequenceEmpty": convert_sequence_empty, "SequenceConstruct": convert_sequence_construct,
    "SequenceInsert": convert_sequence_insert, "SequenceErase": convert_sequence_erase,
    "SequenceAt": convert_sequence_at, "SequenceLength": convert_sequence_length,
    "ConcatFromSequence": convert_concat_from_sequence, "SplitToSequence": convert_split_to_sequence,
    "SequenceMap": convert_sequence_map,
})
