"""validate_plan catches every kind of invalid placement, and names the culprits."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlxir.planning import Buffer, PlanError, get_planner, validate, validate_plan
from rlxir.planning.compiled import COMPILED_FROM, compiled_placement_available, overlap_found
from rlxir.planning.problem import Problem

from .strategies import buffer_lists

BUFFERS = [Buffer("a", 0, 4, 16), Buffer("b", 2, 6, 16), Buffer("c", 4, 8, 16)]


def test_valid_plan_passes():
    # c reuses a's bytes: a ends at step 4, where c starts (half-open intervals).
    validate_plan(BUFFERS, [0, 16, 0], alignment=16, arena_bytes=32)
    validate_plan(BUFFERS, {"a": 0, "b": 16, "c": 0}, alignment=16, arena_bytes=32)


def test_overlap_of_live_buffers_names_both():
    with pytest.raises(PlanError) as error:
        validate_plan(BUFFERS, [0, 0, 16], alignment=16, arena_bytes=32)
    message = str(error.value)
    assert "'a' (live [0, 4), bytes [0, 16))" in message
    assert "'b' (live [2, 6), bytes [0, 16))" in message
    assert "overlap in address" in message


def test_partial_overlap_from_above_and_below():
    with pytest.raises(PlanError, match="'a'.*'b'|'b'.*'a'"):
        validate_plan(BUFFERS, [8, 0, 32], alignment=8, arena_bytes=48)
    with pytest.raises(PlanError, match="'a'.*'b'|'b'.*'a'"):
        validate_plan(BUFFERS, [0, 8, 32], alignment=8, arena_bytes=48)


def test_unaligned_offset():
    with pytest.raises(PlanError, match="'b'.*not a multiple of the alignment 16"):
        validate_plan(BUFFERS, [0, 20, 0], alignment=16, arena_bytes=64)


def test_negative_offset():
    with pytest.raises(PlanError, match="'a'.*negative offset"):
        validate_plan(BUFFERS, [-16, 16, 0], alignment=16, arena_bytes=32)


def test_buffer_past_the_arena():
    with pytest.raises(PlanError, match="'b'.*ends past the arena of 24 bytes"):
        validate_plan(BUFFERS, [0, 16, 0], alignment=8, arena_bytes=24)


def test_arena_check_uses_aligned_sizes():
    buffers = [Buffer("x", 0, 1, 10)]
    validate_plan(buffers, [0], alignment=1, arena_bytes=10)
    with pytest.raises(PlanError, match="ends past the arena"):
        validate_plan(buffers, [0], alignment=16, arena_bytes=10)


def test_fixed_offset_must_be_kept():
    buffers = [Buffer("w", 0, 8, 16, fixed_offset=32), Buffer("x", 0, 8, 16)]
    validate_plan(buffers, [32, 0], alignment=16, arena_bytes=48)
    with pytest.raises(PlanError, match="'w'.*imposed as 32"):
        validate_plan(buffers, [0, 16], alignment=16, arena_bytes=48)


def test_missing_and_miscounted_offsets():
    with pytest.raises(PlanError, match="no offset for buffer.*'c'"):
        validate_plan(BUFFERS, {"a": 0, "b": 16}, alignment=16, arena_bytes=32)
    with pytest.raises(PlanError, match="2 offsets given for 3 buffers"):
        validate_plan(BUFFERS, [0, 16], alignment=16, arena_bytes=32)


def test_offsets_by_name_in_any_order_or_with_extra_names():
    validate_plan(BUFFERS, {"c": 0, "b": 16, "a": 0}, alignment=16, arena_bytes=32)
    validate_plan(BUFFERS, {"a": 0, "b": 16, "c": 0, "unused": 999}, alignment=16, arena_bytes=32)
    with pytest.raises(PlanError, match="'a'.*'b'|'b'.*'a'"):
        validate_plan(BUFFERS, {"c": 16, "b": 0, "a": 0}, alignment=16, arena_bytes=32)
    with pytest.raises(PlanError, match="'c'.*negative offset"):
        validate_plan(BUFFERS, {"b": 16, "c": -16, "a": 0, "d": 0}, alignment=16, arena_bytes=32)


def test_non_integer_offset():
    with pytest.raises(PlanError, match="not an integer"):
        validate_plan(BUFFERS, [0, 16.0, 0], alignment=16, arena_bytes=32)


def test_empty_buffers_never_collide():
    buffers = [Buffer("a", 0, 4, 16), Buffer("empty", 0, 4, 0)]
    validate_plan(buffers, [0, 0], alignment=16, arena_bytes=16)


def test_nested_lifetimes_with_a_gap_in_between():
    # c is live inside a's lifetime and sits between a and b in address.
    buffers = [Buffer("a", 0, 10, 8), Buffer("b", 0, 10, 8), Buffer("c", 3, 5, 8), Buffer("d", 4, 6, 8)]
    validate_plan(buffers, [0, 16, 8, 24], alignment=8, arena_bytes=32)
    with pytest.raises(PlanError, match="'c'.*'d'|'d'.*'c'"):
        validate_plan(buffers, [0, 16, 8, 8], alignment=8, arena_bytes=32)


def test_duplicate_names_are_refused():
    with pytest.raises(PlanError, match="'a' appears more than once"):
        validate_plan([Buffer("a", 0, 1, 1), Buffer("a", 1, 2, 1)], [0, 0], alignment=1, arena_bytes=1)


def _overlap_exists(buffers, offsets) -> bool:
    """Any two buffers live at the same time with intersecting address ranges (pair by pair)."""
    for i, first in enumerate(buffers):
        for j in range(i):
            second = buffers[j]
            if (first.size and second.size and first.start < second.end and second.start < first.end
                    and offsets[i] < offsets[j] + second.size and offsets[j] < offsets[i] + first.size):
                return True
    return False


@settings(max_examples=300, deadline=None)
@given(buffer_lists(max_buffers=40), st.lists(st.integers(0, 40), min_size=40, max_size=40), st.sampled_from([1, 2, 512]))
def test_the_sweep_agrees_with_checking_every_pair(buffers, slots, chunk):
    """Chunks of one or two ranges split and empty every few events; 512 keeps one.
    Sizes under 48 bytes at offsets 16 bytes apart make a collision a matter of one or two
    pairs, which only the sweep's neighbour checks can find."""
    buffers = [Buffer(buffer.name, buffer.start, buffer.end, buffer.size % 48) for buffer in buffers]
    offsets = [16 * slot for slot in slots[: len(buffers)]]
    arena = max((offset + buffer.size for offset, buffer in zip(offsets, buffers)), default=0)
    with chunks_of(chunk):
        if _overlap_exists(buffers, offsets):
            with pytest.raises(PlanError, match="overlap in address"):
                validate_plan(buffers, offsets, alignment=1, arena_bytes=arena)
        else:
            validate_plan(buffers, offsets, alignment=1, arena_bytes=arena)


@settings(max_examples=300, deadline=None)
@given(buffer_lists(max_buffers=40), st.lists(st.integers(0, 40), min_size=40, max_size=40))
def test_with_room_for_every_buffer_side_by_side_the_answer_is_the_same(buffers, slots):
    """An arena that holds every buffer side by side lets the check try the plan as one
    with no shared address first: a plan that shares none passes, one that shares some
    goes on to the sweep, which still finds exactly the collisions of live buffers."""
    buffers = [Buffer(buffer.name, buffer.start, buffer.end, buffer.size % 48) for buffer in buffers]
    offsets = [16 * slot for slot in slots[: len(buffers)]]
    arena = max(sum(buffer.size for buffer in buffers),
                max((offset + buffer.size for offset, buffer in zip(offsets, buffers)), default=0))
    if _overlap_exists(buffers, offsets):
        with pytest.raises(PlanError, match="overlap in address"):
            validate_plan(buffers, offsets, alignment=1, arena_bytes=arena)
    else:
        validate_plan(buffers, offsets, alignment=1, arena_bytes=arena)


def test_a_bump_plan_is_accepted_without_the_sweep_and_a_shared_address_still_named(monkeypatch):
    buffers = [Buffer(f"t{index}", index, index + 3, 16 + index % 3) for index in range(50)]
    result = get_planner("bump").plan(buffers, 8)
    swept = []
    monkeypatch.setattr(validate, "_check_disjoint_while_live",
                        lambda *args: swept.append(True) or sweep(*args))
    validate_plan(buffers, result.offsets, 8, result.arena_bytes)
    assert swept == []
    offsets = list(result.offsets.values())
    offsets[21] = offsets[20]  # t20 and t21 are live together over steps [21, 23)
    with pytest.raises(PlanError, match="'t20'.*'t21'.*overlap in address"):
        validate_plan(buffers, offsets, 8, result.arena_bytes)
    assert swept == [True]
    offsets[21] = offsets[17]  # t17 ends at step 20, where t21 starts: the address may be reused
    validate_plan(buffers, offsets, 8, result.arena_bytes)


sweep = validate._check_disjoint_while_live


@contextmanager
def chunks_of(size: int):
    """The live-range sweep's chunk size set to `size` for the block."""
    saved = validate._CHUNK
    validate._CHUNK = size
    try:
        yield
    finally:
        validate._CHUNK = saved


needs_compiled = pytest.mark.skipif(not compiled_placement_available(), reason="Numba does not import here")


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(buffer_lists(max_buffers=40), st.lists(st.integers(0, 40), min_size=40, max_size=40))
def test_the_compiled_check_agrees_with_checking_every_pair(buffers, slots):
    """The same collisions of one or two pairs, for the compiled check large plans take."""
    buffers = [Buffer(buffer.name, buffer.start, buffer.end, buffer.size % 48) for buffer in buffers]
    offsets = [16 * slot for slot in slots[: len(buffers)]]
    problem = Problem.build(buffers, 1)
    assert overlap_found(problem, np.array(offsets, dtype=np.int64)) == _overlap_exists(buffers, offsets)


def _large_plan(count: int) -> tuple[list[Buffer], list[int]]:
    """`count` buffers of 16 bytes, live four steps each and two at a time at most, at 0 and
    16 in turn: a valid plan."""
    buffers = [Buffer(f"t{index}", 2 * index, 2 * index + 4, 16) for index in range(count)]
    return buffers, [16 * (index % 2) for index in range(count)]


@needs_compiled
def test_a_large_plan_is_checked_compiled_and_an_overlap_still_named(monkeypatch):
    buffers, offsets = _large_plan(COMPILED_FROM + 10)
    seen = []
    monkeypatch.setattr(validate, "overlap_found", lambda *args: seen.append(overlap_found(*args)) or seen[-1])
    monkeypatch.setattr(validate, "VALIDATE_COLD_FROM", 0)  # as in a process that has the loops loaded
    validate_plan(buffers, offsets, alignment=16, arena_bytes=32)
    assert seen == [False]
    offsets[9000] = 16  # onto t8999 (live with it over steps [18000, 18002)) and t9001 after it
    with pytest.raises(PlanError) as error:
        validate_plan(buffers, offsets, alignment=16, arena_bytes=32)
    assert seen == [False, True]
    assert str(error.value) == ("buffers 't8999' (live [17998, 18002), bytes [16, 32)) and 't9000' (live [18000, "
                                "18004), bytes [16, 32)) are live at the same time and overlap in address")


def test_the_first_bad_offset_is_named_whichever_check_finds_it():
    buffers, offsets = _large_plan(100)
    offsets[40], offsets[70] = 8, -16
    with pytest.raises(PlanError, match="'t40'.*not a multiple of the alignment 16"):
        validate_plan(buffers, offsets, alignment=16, arena_bytes=32)
    offsets[40] = 48
    with pytest.raises(PlanError, match="'t40'.*ends past the arena of 32 bytes"):
        validate_plan(buffers, offsets, alignment=16, arena_bytes=32)
    offsets[40] = 0
    with pytest.raises(PlanError, match="'t70'.*negative offset"):
        validate_plan(buffers, offsets, alignment=16, arena_bytes=32)
    offsets[70] = 2**70  # past int64: the Python loop words it
    with pytest.raises(PlanError, match="'t70'.*ends past the arena"):
        validate_plan(buffers, offsets, alignment=16, arena_bytes=32)
