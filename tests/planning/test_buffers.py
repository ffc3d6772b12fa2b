"""Buffer, PlanResult and alignment rounding."""

from __future__ import annotations

import pytest

from rlxir.planning import Buffer, PlanResult, aligned_size


@pytest.mark.parametrize(
    ("size", "alignment", "expected"),
    [(0, 16, 0), (1, 16, 16), (16, 16, 16), (17, 16, 32), (5, 1, 5), (2**80 + 1, 2**10, 2**80 + 2**10)],
)
def test_aligned_size_rounds_up(size, alignment, expected):
    assert aligned_size(size, alignment) == expected


def test_aligned_size_rejects_non_positive_alignment():
    with pytest.raises(ValueError, match="alignment"):
        aligned_size(8, 0)


def test_buffer_needs_a_non_empty_interval():
    with pytest.raises(ValueError, match=r"\[3, 3\) is empty"):
        Buffer("x", 3, 3, 8)


def test_buffer_rejects_negative_size_and_offset():
    with pytest.raises(ValueError, match="size must be >= 0"):
        Buffer("x", 0, 1, -1)
    with pytest.raises(ValueError, match="fixed_offset must be >= 0"):
        Buffer("x", 0, 1, 4, fixed_offset=-4)


def test_buffer_lifetime():
    assert Buffer("x", 2, 7, 1).lifetime == 5


def test_plan_result_ratio():
    result = PlanResult({}, arena_bytes=30, lower_bound_bytes=20, unshared_bytes=40, alignment=1, planner="x", seconds=0)
    assert result.ratio == 1.5
    empty = PlanResult({}, arena_bytes=0, lower_bound_bytes=0, unshared_bytes=0, alignment=1, planner="x", seconds=0)
    assert empty.ratio == 1.0
