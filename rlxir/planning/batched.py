"""Best-fit placement in a given order, many buffers per NumPy call.

The same rule as `place_in_order` over the `OccupancyTree` (each buffer at the lowest
offset of the smallest free gap among the already-placed buffers it overlaps, else on top
of them), computed without a Python step per buffer:

- every pair of overlapping buffers is listed once, up front (`overlap_pairs`), and
  oriented from the one placed first to the one placed later;
- the order is cut into chunks of `CHUNK` consecutive placements. Inside a chunk, a
  buffer's *level* is 1 + the highest level of the chunk's earlier buffers it overlaps.
  Buffers of one level overlap none of each other, and everything they overlap that comes
  earlier in the order is placed once the lower levels are: so a whole level is placed at
  once, each buffer from its own list of earlier neighbours;
- a level's best fits are found together: the neighbours' starts and ends, sorted per
  buffer (one key ``buffer << shift | address``), give every free gap below the top; the
  smallest gap that holds the buffer, lowest first, wins, and the top of the neighbours
  when none does.

The work is proportional to the number of overlapping pairs, in NumPy: cheap where each
buffer overlaps tens of others (typical schedules), not where it overlaps hundreds (the
occupancy tree is used there, see `overlap_pairs`). Results equal the tree's, buffer for buffer.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from rlxir.planning.problem import Problem

# Placements per chunk (a power of two): levels stay few (a chunk's buffers rarely overlap each other)
# while the NumPy calls per chunk are spread over a thousand placements.
CHUNK = 1024

# Above this many overlapping pairs per buffer the pair lists cost more memory and time
# than the occupancy tree's merged range lists.
MAX_PAIRS_PER_BUFFER = 96

# Most levels per chunk (at least 16 buffers a level on average); deeper chunks are left
# to the occupancy tree.
MAX_LEVELS = CHUNK // 16

# Keys pack (buffer within the chunk, address) into one int64.
_CHUNK_BITS = (CHUNK - 1).bit_length()
_KEY_BITS = 62


def overlap_pairs(
    problem: Problem, max_per_buffer: int = MAX_PAIRS_PER_BUFFER
) -> tuple[np.ndarray, np.ndarray] | None:
    """Every pair of non-empty buffers whose slot ranges meet, once, as two index arrays;
    None where batched placement does not suit `problem` (more than `max_per_buffer`
    pairs per buffer, or addresses too wide for the int64 sort keys).

    Sorted by first slot, a buffer overlaps exactly the later-sorted ones that start
    before its last slot ends: one contiguous run each, expanded with `np.repeat`.
    """
    if (
        not problem.int64_safe
        or _address_bits(problem, _common_unit(problem)) + _CHUNK_BITS > _KEY_BITS
    ):
        return None
    present = np.flatnonzero(problem.size_keys > 0)
    by_start = present[np.argsort(problem.slot_lo[present], kind="stable")]
    lo = problem.slot_lo[by_start]
    hi = problem.slot_hi[by_start]
    positions = np.arange(len(by_start))
    counts = np.searchsorted(lo, hi, "left") - positions - 1
    total = int(counts.sum())
    if total > max_per_buffer * len(problem) or total >= 2**31:
        return None
    # Indices fit int32 (a pair list past 2**31 entries is refused above): half the
    # memory traffic of int64 in the gathers and sorts that follow.
    first = np.repeat(positions.astype(np.int32), counts)
    run_starts = np.cumsum(counts) - counts
    second = (
        first
        + 1
        + (
            np.arange(total, dtype=np.int32)
            - np.repeat(run_starts.astype(np.int32), counts)
        )
    )
    by_start = by_start.astype(np.int32)
    return by_start[first], by_start[second]


class Batches(NamedTuple):
    """A placement order cut into chunks, each with its pairs and its members' levels."""

    order: np.ndarray
    chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]]  # (earlier, local later, levels)


def schedule_batches(
    problem: Problem,
    order: Sequence[int],
    pairs: tuple[np.ndarray, np.ndarray],
    max_levels: int = MAX_LEVELS,
) -> Batches | None:
    """The chunks and levels of batched placement in `order`; None when a chunk needs
    more than `max_levels` levels (then levels hold a few buffers each, and a NumPy
    round per level costs more than the occupancy tree: sizes falling along the
    schedule, as in a CNN, make every chunk one chain).

    `pairs` is what `overlap_pairs(problem)` returned (not None).
    """
    n = len(problem)
    order_array = np.asarray(order, dtype=np.int64).reshape(len(order))
    rank = np.full(n, -1, dtype=np.int32)  # fixed buffers: placed before all others
    rank[order_array] = np.arange(len(order_array), dtype=np.int32)
    earlier, later_rank = _oriented(pairs, rank)
    chunk_count = -(-len(order_array) // CHUNK)
    chunk_of = later_rank >> _CHUNK_BITS
    # Stable sorts of 8- and 16-bit keys are radix sorts: one or two passes.
    key_type = np.uint8 if chunk_count <= 256 else np.uint16 if chunk_count <= 65536 else np.int64
    by_chunk = np.argsort(chunk_of.astype(key_type), kind="stable")
    # One gather of both halves packed in an int64 costs half of two gathers.
    packed = ((later_rank.astype(np.int64) << 32) | earlier)[by_chunk]
    bounds = [0, *np.cumsum(np.bincount(chunk_of, minlength=chunk_count)).tolist()]
    chunks = []
    for chunk in range(chunk_count):
        first = chunk * CHUNK
        pairs_here = packed[bounds[chunk] : bounds[chunk + 1]]
        local_later = (pairs_here >> 32) - first
        earlier_here = pairs_here & 0xFFFFFFFF
        member_count = min(CHUNK, len(order_array) - first)
        level = _levels(member_count, rank[earlier_here] - first, local_later, max_levels)
        if level is None:
            return None
        chunks.append((earlier_here, local_later, level))
    return Batches(order_array, chunks)


def place_batched(
    problem: Problem,
    batches: Batches,
    deadline: float = math.inf,
    progress: Callable[[int, int], None] | None = None,
    stop_at: int | None = None,
) -> list[int] | None:
    """Offsets (one per buffer, input order) from best-fit placement in the order
    `batches` was scheduled for (`schedule_batches`).

    Fixed offsets are kept and avoided; empty buffers get 0. None if the clock passes
    `deadline` (read once per chunk, when `progress(placed, total)` is called too), or
    once a chunk places a buffer ending at or above `stop_at` (when given).
    """
    n = len(problem)
    # Every offset is a sum of sizes and fixed offsets: counting in units of their common
    # divisor keeps the sort keys short (int32 where they fit).
    unit = _common_unit(problem)
    sizes = problem.size_keys // unit
    offsets = np.zeros(n, dtype=np.int64)
    for index, fixed in enumerate(problem.fixed):
        if fixed is not None:
            offsets[index] = fixed // unit
    total = len(batches.order)
    for chunk, (earlier, local_later, level) in enumerate(batches.chunks):
        if progress is not None:
            progress(chunk * CHUNK, total)
        if time.perf_counter() > deadline:
            return None
        members = batches.order[chunk * CHUNK : (chunk + 1) * CHUNK]
        _place_chunk(members, earlier, local_later, level, sizes, offsets)
        if stop_at is not None and int((offsets[members] + sizes[members]).max()) * unit >= stop_at:
            return None
    if unit != 1:
        offsets *= unit
    return offsets.tolist()


def _common_unit(problem: Problem) -> int:
    """The greatest common divisor of all sizes and fixed offsets (1 when all are 0)."""
    unit = int(np.gcd.reduce(problem.size_keys)) if len(problem) else 0
    for fixed in problem.fixed:
        if fixed is not None:
            unit = math.gcd(unit, fixed)
    return unit or 1


def _oriented(
    pairs: tuple[np.ndarray, np.ndarray], rank: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(earlier buffer, rank of the later one) per pair; pairs of two fixed buffers are
    dropped."""
    first, second = pairs
    first_rank = rank[first]
    second_rank = rank[second]
    second_later = second_rank > first_rank
    earlier = np.where(second_later, first, second)
    later_rank = np.maximum(first_rank, second_rank)
    keep = later_rank >= 0
    if keep.all():
        return earlier, later_rank
    return earlier[keep], later_rank[keep]


def _place_chunk(
    members: np.ndarray,
    earlier: np.ndarray,
    local_later: np.ndarray,
    level: np.ndarray,
    sizes: np.ndarray,
    offsets: np.ndarray,
) -> None:
    """Place a chunk's `members` level by level; the pairs are ``(earlier[k],
    members[local_later[k]])``."""
    member_sizes = sizes[members]
    levels = int(level.max()) + 1
    if levels == 1:
        _place_level(members, np.arange(len(members)), local_later, earlier, member_sizes, sizes, offsets)
        return
    # Group the pairs by level once (levels are below CHUNK: 16-bit keys sort by radix).
    level = level.astype(np.uint16)
    pair_level = level[local_later]
    by_level = np.argsort(pair_level, kind="stable")
    pair_bounds = np.searchsorted(pair_level[by_level], np.arange(levels + 1)).tolist()
    member_by_level = np.argsort(level, kind="stable")
    member_bounds = np.searchsorted(level[member_by_level], np.arange(levels + 1)).tolist()
    for current in range(levels):
        chosen = by_level[pair_bounds[current] : pair_bounds[current + 1]]
        at_level = member_by_level[member_bounds[current] : member_bounds[current + 1]]
        _place_level(members, at_level, local_later[chosen], earlier[chosen], member_sizes, sizes, offsets)


def _place_level(
    members: np.ndarray,
    at_level: np.ndarray,
    member: np.ndarray,
    neighbour: np.ndarray,
    member_sizes: np.ndarray,
    sizes: np.ndarray,
    offsets: np.ndarray,
) -> None:
    """Place `members[at_level]`, whose placed neighbours are the pairs ``(member[k],
    neighbour[k])`` (member as an index into `members`)."""
    found = _best_fits(member, offsets[neighbour], sizes[neighbour], member_sizes)
    offsets[members[at_level]] = np.where(
        member_sizes[at_level] > 0, found[at_level], 0
    )


def _levels(
    count: int, local_earlier: np.ndarray, local_later: np.ndarray, max_levels: int
) -> np.ndarray | None:
    """Per member, 1 + the highest level of the earlier members it overlaps (0 if none);
    None past `max_levels` levels."""
    inside = local_earlier >= 0
    source = local_earlier[inside]
    target = local_later[inside]
    level = np.zeros(count, dtype=np.int64)
    for _ in range(max_levels):
        if len(source) == 0:
            return level
        raised = np.zeros(count, dtype=np.int64)
        np.maximum.at(raised, target, level[source] + 1)
        if np.array_equal(raised, level):
            return level
        level = raised
    return None


def _best_fits(
    member: np.ndarray, starts: np.ndarray, sizes: np.ndarray, member_sizes: np.ndarray
) -> np.ndarray:
    """Best-fit offset per member (0 for members without neighbours), given the start and
    size of every placed neighbour of each pair ``(member[k], neighbour)``."""
    found = np.zeros(len(member_sizes), dtype=np.int64)
    if len(member) == 0:
        return found
    ends = starts + sizes
    shift = int(ends.max()).bit_length()
    key_type = np.int32 if shift + _CHUNK_BITS <= 31 else np.int64
    base = member.astype(key_type) << shift
    start_keys = base | starts.astype(key_type)
    start_keys.sort()
    end_keys = base | ends.astype(key_type)
    end_keys.sort()
    mask = (1 << shift) - 1
    owner = start_keys >> shift
    starts = start_keys & mask
    ends = end_keys & mask
    opens = np.empty(len(owner), dtype=bool)
    opens[0] = True
    np.not_equal(owner[1:], owner[:-1], out=opens[1:])
    # Starts and ends sorted apart: the gap before start k is free exactly when positive.
    below = np.empty_like(ends)
    below[0] = 0
    below[1:] = ends[:-1]
    below[opens] = 0
    gap = starts - below
    closes = np.empty_like(opens)
    closes[-1] = True
    closes[:-1] = opens[1:]
    found[owner[closes]] = ends[closes]  # the top, where no gap holds the member
    fitting = np.flatnonzero(gap >= member_sizes[owner])
    if len(fitting):
        keys = (owner[fitting].astype(np.int64) << shift) | gap[fitting]
        fitting = fitting[np.argsort(keys, kind="stable")]
        best = np.empty(len(fitting), dtype=bool)
        best[0] = True
        np.not_equal(owner[fitting[1:]], owner[fitting[:-1]], out=best[1:])
        chosen = fitting[best]
        found[owner[chosen]] = below[chosen]
    return found


def _address_bits(problem: Problem, unit: int) -> int:
    """Bits of the highest address, in `unit` s, that any placement of `problem` can reach."""
    highest_fixed = max((f for f in problem.fixed if f is not None), default=0)
    return ((highest_fixed + sum(problem.sizes)) // unit + 1).bit_length()
