"""Check a placement: aligned, inside the arena, imposed offsets kept, no live overlap."""

from __future__ import annotations

import contextlib
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from operator import itemgetter

import numpy as np

from rlxir.planning.buffers import Buffer, Offsets
from rlxir.planning.compiled import NO_LIMIT, overlap_found, use_compiled
from rlxir.planning.errors import PlanError
from rlxir.planning.problem import Problem

VALIDATE_COLD_FROM = 400_000
"""Buffers from which a process that has not loaded the compiled loops loads them to check
a placement for overlaps (where it has, they check from `COMPILED_FROM` buffers up): the
Python sweep costs about 1.7 us a buffer, loading them about 0.4 s."""


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

    A plan whose buffers share no address at all, whatever their lifetimes (every `bump`
    plan), is accepted from one sort of the address ranges. Otherwise a sweep over start
    and end events keeps the address ranges of the live buffers
    sorted by offset (`_LiveRanges`: sorted chunks, so no event shifts more than one
    chunk however many buffers are live); since those ranges are pairwise disjoint, a
    new buffer can only collide with its two neighbours. The overlapping pairs are never
    enumerated. Where the placement loops run compiled (`use_compiled`; a process that
    has not loaded them loads them from `VALIDATE_COLD_FROM` buffers), a compiled check
    (`overlap_found`) answers first, about 30x faster than the sweep, and the sweep runs
    only to name the buffers of an overlap it found.
    """
    problem = Problem.build(buffers, alignment)
    placed = _offsets_in_order(problem, offsets)
    as_array = _check_each(problem, placed, arena_bytes)
    if as_array is not None and _addresses_disjoint(problem, as_array, arena_bytes):
        return
    if as_array is not None and use_compiled(problem, cold_from=VALIDATE_COLD_FROM) \
            and not overlap_found(problem, as_array):
        return
    # In Python, or to find and word the overlap the compiled check found.
    _check_disjoint_while_live(problem, placed)


def _addresses_disjoint(problem: Problem, offsets: np.ndarray, arena_bytes: int) -> bool:
    """Whether no two buffers of a size share an address at all, whatever their lifetimes
    (every `bump` plan): then no two overlap while live. Tried only where the arena holds
    every buffer side by side (a smaller arena must reuse some address), in NumPy: the
    address ranges in order of offset, each ending at or before the next begins."""
    if problem.unshared_bytes() > arena_bytes:
        return False
    sizes = problem.size_keys
    taking = sizes > 0  # an empty buffer holds no address
    starts = offsets[taking]
    order = np.argsort(starts)
    starts = starts[order]
    ends = starts + sizes[taking][order]
    return bool(np.all(ends[:-1] <= starts[1:]))


def _check_each(problem: Problem, placed: list[int], arena_bytes: int) -> np.ndarray | None:
    """Raise `PlanError` for the first offset that is not an integer, negative, off the
    alignment, not the imposed one or past the arena. Where the problem and the arena are
    int64-safe, the offsets are then returned as an int64 array (the checks run on it, in
    NumPy); otherwise None."""
    alignment = problem.alignment
    if problem.int64_safe and arena_bytes < NO_LIMIT and set(map(type, placed)) <= {int}:
        with contextlib.suppress(OverflowError):  # an offset past int64: the loop below words it
            array = np.array(placed, dtype=np.int64).reshape(len(placed))
            bad = (array < 0) | (array > arena_bytes - problem.size_array()) | (array % alignment != 0)
            if problem.has_fixed():
                imposed = np.fromiter((fixed is not None for fixed in problem.fixed), dtype=bool,
                                      count=len(problem.fixed))
                bad |= imposed & (array != problem.fixed_array())
            if not bad.any():
                return array
            _check_one(problem, placed, int(np.flatnonzero(bad)[0]), arena_bytes)
    for index, (offset, size, fixed) in enumerate(zip(placed, problem.sizes, problem.fixed)):
        # The common case in one expression; `_check_one` finds and explains the failure.
        if not (
            type(offset) is int and 0 <= offset and offset + size <= arena_bytes and offset % alignment == 0
            and (fixed is None or offset == fixed)
        ):
            _check_one(problem, placed, index, arena_bytes)
    return None


def _offsets_in_order(problem: Problem, offsets: Sequence[int] | Mapping[str, int]) -> list[int]:
    buffers = problem.buffers
    if isinstance(offsets, Offsets):
        # A planner's `PlanResult.offsets`: beside the names in the buffers' order already
        # (the names compare by identity; no lookup by name).
        placed = offsets.in_order(problem.names)
        if placed is not None:
            return placed
    if type(offsets) is dict and len(offsets) == len(buffers) and list(offsets) == problem.names:
        return list(offsets.values())
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
    live = _LiveRanges()  # live buffers are disjoint, so their offsets are unique
    for event in _event_order(problem).tolist():
        index = event % n
        if sizes[index] == 0:
            continue  # an empty buffer holds no address
        offset = placed[index]
        chunk, position = live.locate(offset)
        if event >= n:
            live.remove(chunk, position)
            continue
        below, above = live.neighbours(chunk, position)
        if below is not None and placed[below] + sizes[below] > offset:
            _raise_overlap(problem, placed, below, index)
        if above is not None and placed[above] < offset + sizes[index]:
            _raise_overlap(problem, placed, above, index)
        live.insert(chunk, position, offset, index)


_CHUNK = 512
"""Live ranges per chunk of `_LiveRanges` after a split (a chunk splits past twice this)."""


_first = itemgetter(0)


class _LiveRanges:
    """The live buffers by offset: sorted runs ("chunks") of at most 2 * `_CHUNK` offsets,
    with their buffer ids. An insertion or removal shifts
    one chunk, not the whole live set: with one sorted list, validating a training graph
    (its thousands of params live throughout) grew with the square of its size (0.34 s
    at 10^5 statements, 2.3 s at 3x10^5)."""

    def __init__(self) -> None:
        self.offsets: list[list[int]] = []
        self.ids: list[list[int]] = []

    def locate(self, offset: int) -> tuple[int, int]:
        """(chunk, position) where `offset` is, or would go."""
        if not self.offsets:
            return 0, 0
        chunk = max(bisect_right(self.offsets, offset, key=_first) - 1, 0)
        return chunk, bisect_left(self.offsets[chunk], offset)

    def neighbours(self, chunk: int, position: int) -> tuple[int | None, int | None]:
        """The ids of the live buffers just below and just above (chunk, position)."""
        ids = self.ids
        if not ids:
            return None, None
        if position > 0:
            below = ids[chunk][position - 1]
        else:
            below = ids[chunk - 1][-1] if chunk > 0 else None
        if position < len(ids[chunk]):
            above = ids[chunk][position]
        else:
            above = ids[chunk + 1][0] if chunk + 1 < len(ids) else None
        return below, above

    def insert(self, chunk: int, position: int, offset: int, index: int) -> None:
        if not self.offsets:
            self.offsets.append([offset])
            self.ids.append([index])
            return
        offsets, ids = self.offsets[chunk], self.ids[chunk]
        offsets.insert(position, offset)
        ids.insert(position, index)
        if len(offsets) > 2 * _CHUNK:
            self.offsets.insert(chunk + 1, offsets[_CHUNK:])
            self.ids.insert(chunk + 1, ids[_CHUNK:])
            del offsets[_CHUNK:], ids[_CHUNK:]

    def remove(self, chunk: int, position: int) -> None:
        offsets, ids = self.offsets[chunk], self.ids[chunk]
        del offsets[position], ids[position]
        if not offsets:
            del self.offsets[chunk], self.ids[chunk]


def _raise_overlap(problem: Problem, placed: list[int], first: int, second: int) -> None:
    raise PlanError(
        f"buffers {_describe(problem, placed, first)} and {_describe(problem, placed, second)} "
        "are live at the same time and overlap in address"
    )
