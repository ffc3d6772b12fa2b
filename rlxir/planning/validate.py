"""Check a placement: aligned, inside the arena, imposed offsets kept, no live overlap."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence

import numpy as np

from rlxir.planning.buffers import Buffer
from rlxir.planning.errors import PlanError
from rlxir.planning.problem import Problem


def validate_plan(
    buffers: Sequence[Buffer],
    offsets: Sequence[int] | Mapping[str, int],
    alignment: int,
    arena_bytes: int,
) -> None:
    """Raise `PlanError` unless `offsets` is a valid placement of `buffers`.

    `offsets` is either one offset per buffer, in order, or a mapping from buffer name to
    offset (as in `PlanResult.offsets`). A valid placement gives every buffer an offset
    that is a non-negative multiple of `alignment`, equal to its `fixed_offset` if it has
    one, with ``offset + aligned size <= arena_bytes``; and no two buffers live at the same
    time share an address. The error names the offending buffer(s) with their live
    intervals and address ranges.

    O(n log n): a sweep over start and end events keeps the address ranges of the live
    buffers sorted by offset; since those are pairwise disjoint, a new buffer can only
    collide with its two neighbours. The overlapping pairs are never enumerated.
    """
    problem = Problem.build(buffers, alignment)
    placed = _offsets_in_order(problem.buffers, offsets)
    alignment = problem.alignment
    for index, (offset, size, fixed) in enumerate(zip(placed, problem.sizes, problem.fixed)):
        # The common case in one expression; `_check_one` finds and explains the failure.
        if not (
            type(offset) is int and 0 <= offset and offset + size <= arena_bytes and offset % alignment == 0
            and (fixed is None or offset == fixed)
        ):
            _check_one(problem, placed, index, arena_bytes)
    _check_disjoint_while_live(problem, placed)


def _offsets_in_order(buffers: tuple[Buffer, ...], offsets: Sequence[int] | Mapping[str, int]) -> list[int]:
    if isinstance(offsets, Mapping):
        missing = [b.name for b in buffers if b.name not in offsets]
        if missing:
            raise PlanError(f"no offset for buffer(s) {', '.join(map(repr, missing[:5]))}")
        return [offsets[b.name] for b in buffers]
    if len(offsets) != len(buffers):
        raise PlanError(f"{len(offsets)} offsets given for {len(buffers)} buffers")
    return list(offsets)


def _describe(problem: Problem, placed: list[int], index: int) -> str:
    buffer = problem.buffers[index]
    offset = placed[index]
    return (
        f"{buffer.name!r} (live [{buffer.start}, {buffer.end}), "
        f"bytes [{offset}, {offset + problem.sizes[index]}))"
    )


def _check_one(problem: Problem, placed: list[int], index: int, arena_bytes: int) -> None:
    offset = placed[index]
    if not isinstance(offset, (int, np.integer)) or isinstance(offset, bool):
        raise PlanError(f"buffer {problem.buffers[index].name!r}: offset {offset!r} is not an integer")
    what = _describe(problem, placed, index)
    if offset < 0:
        raise PlanError(f"buffer {what}: negative offset")
    if offset % problem.alignment:
        raise PlanError(f"buffer {what}: offset is not a multiple of the alignment {problem.alignment}")
    fixed = problem.fixed[index]
    if fixed is not None and offset != fixed:
        raise PlanError(f"buffer {what}: its offset is imposed as {fixed}")
    if offset + problem.sizes[index] > arena_bytes:
        raise PlanError(f"buffer {what}: ends past the arena of {arena_bytes} bytes")


def _event_order(problem: Problem) -> np.ndarray:
    """Start and end events sorted by slot, ends before starts within a slot.

    Event ``k < n`` starts buffer ``k``; event ``n + k`` ends it. Intervals are half-open,
    so a buffer ending at a slot frees its addresses for one starting there.
    """
    n = len(problem)
    slots = np.concatenate([problem.slot_lo, problem.slot_hi])
    is_start = np.concatenate([np.ones(n, np.int64), np.zeros(n, np.int64)])
    return np.lexsort((is_start, slots))


def _check_disjoint_while_live(problem: Problem, placed: list[int]) -> None:
    n = len(problem)
    sizes = problem.sizes
    live_offsets: list[int] = []  # sorted; live buffers are disjoint, so offsets are unique
    live_ids: list[int] = []
    for event in _event_order(problem).tolist():
        index = event % n
        if sizes[index] == 0:
            continue  # an empty buffer holds no address
        offset = placed[index]
        position = bisect_left(live_offsets, offset)
        if event >= n:
            del live_offsets[position], live_ids[position]
            continue
        _check_neighbours(problem, placed, live_offsets, live_ids, position, index)
        live_offsets.insert(position, offset)
        live_ids.insert(position, index)


def _check_neighbours(
    problem: Problem,
    placed: list[int],
    live_offsets: list[int],
    live_ids: list[int],
    position: int,
    index: int,
) -> None:
    """Check the buffer about to go live at `position` against the live ranges beside it."""
    offset = placed[index]
    if position > 0:
        below = live_ids[position - 1]
        if placed[below] + problem.sizes[below] > offset:
            _raise_overlap(problem, placed, below, index)
    if position < len(live_offsets) and live_offsets[position] < offset + problem.sizes[index]:
        _raise_overlap(problem, placed, live_ids[position], index)


def _raise_overlap(problem: Problem, placed: list[int], first: int, second: int) -> None:
    raise PlanError(
        f"buffers {_describe(problem, placed, first)} and {_describe(problem, placed, second)} "
        "are live at the same time and overlap in address"
    )
