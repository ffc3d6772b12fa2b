"""The bump planner, against hand-computed placements."""

from __future__ import annotations

from rlxir.planning import Buffer, get_planner, validate_plan


def test_every_buffer_at_the_cursor_in_order():
    # Sizes 10, 16, 1, 33 at alignment 16 take 16, 16, 16, 48 bytes: offsets are the
    # running sum, in the order given (not by start time), and nothing is reused even
    # though "a" and "c" never live together.
    buffers = [Buffer("a", 0, 2, 10), Buffer("b", 1, 4, 16), Buffer("c", 3, 5, 1), Buffer("d", 0, 1, 33)]
    result = get_planner("bump").plan(buffers, alignment=16)
    assert result.offsets == {"a": 0, "b": 16, "c": 32, "d": 48}
    assert result.arena_bytes == 96
    assert result.unshared_bytes == 96
    assert result.lower_bound_bytes == 16 + 48  # a and d, both live at step 0
    validate_plan(buffers, result.offsets, 16, result.arena_bytes)


def test_zero_sized_buffers_take_no_room():
    buffers = [Buffer("a", 0, 2, 8), Buffer("z", 0, 2, 0), Buffer("b", 0, 2, 8)]
    result = get_planner("bump").plan(buffers, alignment=8)
    assert result.offsets == {"a": 0, "z": 8, "b": 8}
    assert result.arena_bytes == 16


def test_fixed_offsets_stay_and_the_cursor_starts_above_them():
    buffers = [Buffer("x", 0, 2, 8), Buffer("w", 0, 9, 16, fixed_offset=32), Buffer("y", 1, 3, 8)]
    result = get_planner("bump").plan(buffers, alignment=8)
    assert result.offsets == {"x": 48, "w": 32, "y": 56}
    assert result.arena_bytes == 64
    validate_plan(buffers, result.offsets, 8, result.arena_bytes)


def test_no_buffers():
    result = get_planner("bump").plan([], alignment=16)
    assert result.offsets == {}
    assert (result.arena_bytes, result.lower_bound_bytes, result.unshared_bytes) == (0, 0, 0)
