"""ONNX Loop and Scan, unrolled: the IR has no loop, so the body's nodes are converted once
per iteration (`rlxir.importers.onnx_control.run_subgraph`) with its inputs bound to that
iteration's values, and the per-iteration outputs are stacked with reshape and concat.

- **Scan** (opset 9 on): the scan axis of every scanned input must be static (and the same
  for all). ``scan_input_axes`` / ``scan_input_directions`` pick each input's axis and
  whether it is read from the end; ``scan_output_axes`` / ``scan_output_directions`` say
  where each per-iteration output is stacked and whether in reverse. Scan 8 (a leading
  batch axis on every input and output, ``directions``, an optional ``sequence_lens``) is
  unrolled per batch entry as well; its ``sequence_lens`` must be absent or static with
  every entry the full length.
- **Loop**: the trip count must be known while importing (or absent, with a condition that
  is). A condition known while importing ends the unrolling where it turns false. A
  condition computed at run time keeps the loop-carried values of every iteration after it
  turns false (a ``where`` on the running condition); the scan outputs' length then depends
  on run time, so reading them is refused. The iteration number is a static value, so
  shape arithmetic on it folds.

At most `UNROLL_LIMIT` iterations are unrolled; more is refused.
"""

from __future__ import annotations

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_context import concrete
from rlxir.importers.onnx_control import as_value, is_marker, refuse_missing_ops, result, run_subgraph
from rlxir.importers.onnx_ops import hint, optional_input, unused
from rlxir.importers.onnx_registry import register
from rlxir.ops import normalize_axis

UNROLL_LIMIT = 1024
"""The most iterations a Loop or Scan is unrolled into."""


# --- per-iteration values --------------------------------------------------------------
def take(ctx, item, axis: int, index: int, name: str):
    """`item` (an rlx value or a static array) at `index` along `axis`, that axis dropped."""
    if not isinstance(item, str):
        return np.ascontiguousarray(np.take(item, index, axis=axis))
    shape = ctx.builder.type(item).shape
    part = ctx.builder.op("slice", [item], {"axis": axis, "start": index, "len": 1}, hint=f"{name}.part")
    kept = tuple(dim for position, dim in enumerate(shape) if position != axis)
    return ctx.builder.op("reshape", [part], {"shape": kept}, hint=name)


def stack(ctx, items: list, axis: int, name: str):
    """`items` (each an rlx value or a static array, of one shape) stacked on a new `axis`."""
    if all(not isinstance(item, str) and not is_marker(item) for item in items):
        return np.stack(items, axis=axis)
    values = [as_value(ctx, item, f"{name}.{index}") for index, item in enumerate(items)]
    rows = []
    for index, value in enumerate(values):
        shape = list(ctx.builder.type(value).shape)
        shape.insert(axis, 1)
        rows.append(ctx.builder.op("reshape", [value], {"shape": tuple(shape)}, hint=f"{name}.row{index}"))
    return rows[0] if len(rows) == 1 else ctx.builder.op("concat", rows, {"axis": axis}, hint=name)


def _rank(ctx, item) -> int:
    return ctx.builder.type(item).rank if isinstance(item, str) else np.ndim(item)


def _dim(ctx, item, axis: int):
    return ctx.builder.type(item).shape[axis] if isinstance(item, str) else np.shape(item)[axis]


def _check_count(count, what: str) -> int:
    if not isinstance(count, (int, np.integer)):
        raise UnsupportedModel(f"{what} is {count}, known only at run time",
                               expected=f"a static {what} (the IR has no loop: the body is unrolled)")
    if count > UNROLL_LIMIT:
        raise UnsupportedModel(f"{what} is {count}", expected=f"at most {UNROLL_LIMIT} iterations to unroll")
    return int(count)


# --- Scan ------------------------------------------------------------------------------
SCAN_ATTRIBUTES = {8: {"body", "num_scan_inputs", "directions"},
                   9: {"body", "num_scan_inputs", "scan_input_axes", "scan_input_directions", "scan_output_axes",
                       "scan_output_directions"}}


def convert_scan(ctx, node, attrs):
    known = SCAN_ATTRIBUTES[8 if ctx.opset < 9 else 9]
    unknown = sorted(set(attrs) - known)
    if unknown:
        raise UnsupportedModel(f"Scan attribute(s) {', '.join(unknown)}, which Scan {'8' if ctx.opset < 9 else '9+'} "
                               "does not define", expected=", ".join(sorted(known)))
    body = attrs["body"]
    refuse_missing_ops(body, "body")
    scanned_count = int(attrs["num_scan_inputs"])
    if ctx.opset < 9:
        return _scan_batched(ctx, node, attrs, body, scanned_count)
    items = [result(ctx, name) for name in node.input]
    states, scanned = items[:len(items) - scanned_count], items[len(items) - scanned_count:]
    output_count = len(body.output) - len(states)
    finals, outputs = scan(ctx, node, body, states, scanned, _scan_layout(ctx, attrs, scanned, output_count))
    return finals + outputs


def _scan_layout(ctx, attrs, scanned: list, output_count: int) -> tuple:
    """(input axes (normalized), input reversed?, output axes, output reversed?)."""
    input_axes = list(attrs.get("scan_input_axes", [0] * len(scanned)))
    input_directions = list(attrs.get("scan_input_directions", [0] * len(scanned)))
    output_axes = list(attrs.get("scan_output_axes", [0] * output_count))
    output_directions = list(attrs.get("scan_output_directions", [0] * output_count))
    if (len(input_axes), len(input_directions)) != (len(scanned),) * 2 or \
            (len(output_axes), len(output_directions)) != (output_count,) * 2:
        raise UnsupportedModel("scan axes or directions whose count differs from the scanned inputs/outputs",
                               expected="one entry per scanned input (output)")
    input_axes = [normalize_axis(int(axis), _rank(ctx, item)) for axis, item in zip(input_axes, scanned)]
    return input_axes, [bool(d) for d in input_directions], [int(a) for a in output_axes], \
        [bool(d) for d in output_directions]


def scan(ctx, node, body, states: list, scanned: list, layout: tuple) -> tuple[list, list]:
    """(the final states, the stacked scan outputs) of `body` over `scanned`."""
    input_axes, input_reversed, output_axes, output_reversed = layout
    lengths = {_dim(ctx, item, axis) for item, axis in zip(scanned, input_axes)}
    if len(lengths) != 1:
        raise UnsupportedModel(f"scanned inputs of lengths {sorted(map(str, lengths))}", expected="one scan length")
    length = _check_count(lengths.pop(), "the scan length")
    if length == 0:
        raise UnsupportedModel("a scan of length 0", expected="at least one iteration")
    per_step: list[list] = [[] for _ in output_axes]
    for step in range(length):
        elements = [take(ctx, item, axis, length - 1 - step if reverse else step, f"{hint(node)}.in{index}t{step}")
                    for index, (item, axis, reverse) in enumerate(zip(scanned, input_axes, input_reversed))]
        outputs = run_subgraph(ctx, body, states + elements)
        states = outputs[:len(states)]
        for collected, value in zip(per_step, outputs[len(states):]):
            collected.append(value)
    stacked = []
    for index, (collected, axis, reverse) in enumerate(zip(per_step, output_axes, output_reversed)):
        position = len(states) + index
        if unused(ctx, node, position):
            stacked.append(None)
            continue
        ordered = collected[::-1] if reverse else collected
        stacked.append(stack(ctx, ordered, normalize_axis(axis, _rank(ctx, ordered[0]) + 1), hint(node, position)))
    return states, stacked


def _scan_batched(ctx, node, attrs, body, scanned_count: int):
    """Scan 8: every input and output has a leading batch axis; the body sees one entry."""
    lengths = optional_input(node, 0)
    items = [result(ctx, name) for name in node.input[1:]]
    states, scanned = items[:len(items) - scanned_count], items[len(items) - scanned_count:]
    batches = {_dim(ctx, item, 0) for item in items}
    if len(batches) != 1:
        raise UnsupportedModel(f"inputs of batch sizes {sorted(map(str, batches))}", expected="one batch size")
    batch = _check_count(batches.pop(), "the batch size")
    directions = [bool(d) for d in attrs.get("directions", [0] * scanned_count)]
    length = _dim(ctx, scanned[0], 1) if scanned else None
    if lengths is not None:
        full = ctx.is_static(lengths) and np.all(np.asarray(concrete(ctx.static(lengths), "sequence_lens")) == length)
        if not full:
            raise UnsupportedModel("Scan sequence_lens that is computed at run time or shorter than the scan",
                                   expected="no sequence_lens, or a static one of full lengths")
    output_count = len(body.output) - len(states)
    layout = ([0] * scanned_count, directions, [0] * output_count, [False] * output_count)
    per_entry = []
    for entry in range(batch):
        entry_states = [take(ctx, item, 0, entry, f"{hint(node)}.s{index}b{entry}") for index, item in enumerate(states)]
        entry_scanned = [take(ctx, item, 0, entry, f"{hint(node)}.x{index}b{entry}") for index, item in enumerate(scanned)]
        finals, outputs = scan(ctx, node, body, entry_states, entry_scanned, layout)
        per_entry.append(finals + outputs)
    return [None if per_entry[0][index] is None else
            stack(ctx, [entry[index] for entry in per_entry], 0, hint(node, index))
            for index in range(len(per_entry[0]))]


# --- Loop ------------------------------------------------------------------------------
def convert_loop(ctx, node, attrs):
    body = attrs["body"]
    refuse_missing_ops(body, "body")
    trip_count = _trip_count(ctx, node)
    running = _initial_condition(ctx, node)
    if trip_count is None and not _is_static(running):
        raise UnsupportedModel("a Loop without a trip count whose condition is computed at run time",
                               expected="a static trip count, or a condition known while importing")
    carried = [result(ctx, name) for name in node.input[2:]]
    scan_count = len(body.output) - 1 - len(carried)
    per_step: list[list] = [[] for _ in range(scan_count)]
    limit = UNROLL_LIMIT if trip_count is None else trip_count
    iteration = 0
    while iteration < limit and not (_is_static(running) and not bool(running)):
        outputs = run_subgraph(ctx, body, [np.array(iteration, np.int64), np.array(True), *carried])
        condition, new_carried = outputs[0], outputs[1:1 + len(carried)]
        if _is_static(running):
            carried, running = new_carried, _condition_item(condition)
            if trip_count is None and not _is_static(running):
                raise UnsupportedModel("a Loop without a trip count whose body computes its condition at run time",
                                       expected="a static trip count, or a condition known while importing")
        else:
            carried = [_keep_when(ctx, node, running, new, old, index) for index, (new, old)
                       in enumerate(zip(new_carried, carried))]
            running = _both(ctx, node, running, _condition_item(condition))
        for collected, value in zip(per_step, outputs[1 + len(carried):]):
            collected.append(value)
        iteration += 1
    if trip_count is None and bool(running):
        raise UnsupportedModel(f"a Loop whose condition is still true after {UNROLL_LIMIT} iterations",
                               expected=f"at most {UNROLL_LIMIT} iterations to unroll")
    return carried + _loop_scan_outputs(ctx, node, per_step, len(carried), _is_static(running))


def _trip_count(ctx, node) -> int | None:
    name = optional_input(node, 0)
    if name is None:
        return None
    if not ctx.is_static(name):
        raise UnsupportedModel("its trip count (input 0) is computed at run time",
                               expected="a trip count known while importing (the IR has no loop: the body is "
                                        "unrolled)")
    return _check_count(int(np.asarray(concrete(ctx.static(name), "the trip count")).reshape(-1)[0]), "the trip count")


def _initial_condition(ctx, node):
    name = optional_input(node, 1)
    if name is None:
        return True
    return _condition_item(result(ctx, name))


def _condition_item(condition):
    """A static condition as a Python bool; a run-time one stays an rlx value."""
    if isinstance(condition, str):
        return condition
    return bool(np.asarray(concrete(condition, "the Loop condition")).reshape(-1)[0])


def _is_static(condition) -> bool:
    return isinstance(condition, bool)


def _scalar_condition(ctx, node, condition: str) -> str:
    if ctx.builder.type(condition).rank == 0:
        return condition
    return ctx.builder.op("reshape", [condition], {"shape": ()}, hint=f"{hint(node)}.cond")


def _keep_when(ctx, node, running: str, new, old, index: int) -> str:
    """`new` where the loop was still running, else `old`."""
    running = _scalar_condition(ctx, node, running)
    new_value, old_value = as_value(ctx, new, f"{hint(node, index)}.new"), as_value(ctx, old, f"{hint(node, index)}.old")
    return ctx.builder.op("where", [running, new_value, old_value], hint=f"{hint(node, index)}.kept")


def _both(ctx, node, running: str, condition) -> str:
    running = _scalar_condition(ctx, node, running)
    if _is_static(condition):
        return running if condition else ctx.builder.scalar(False, DType.bool)
    condition = _scalar_condition(ctx, node, condition)
    return ctx.builder.op("minimum", [running, condition], hint=f"{hint(node)}.running")


def _loop_scan_outputs(ctx, node, per_step: list, carried_count: int, known_length: bool) -> list:
    outputs = []
    for index, collected in enumerate(per_step):
        position = carried_count + index  # node outputs: carried values, then scan outputs
        if unused(ctx, node, position):
            outputs.append(None)
            continue
        if not known_length:
            raise UnsupportedModel(f"its scan output {index} is read, and its length depends on a condition "
                                   "computed at run time", expected="a condition known while importing")
        if not collected:
            raise UnsupportedModel(f"its scan output {index} is read, and the loop runs no iteration",
                                   expected="at least one iteration")
        outputs.append(stack(ctx, collected, 0, hint(node, position)))
    return outputs


register({"Scan": convert_scan, "Loop": convert_loop})
