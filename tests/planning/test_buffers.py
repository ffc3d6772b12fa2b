"""Buffer, PlanResult and alignment rounding."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from rlxir.planning import Buffer, Offsets, PlanResult, aligned_size, get_planner, offsets_in_order, validate_plan


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


BUFFERS = [Buffer("w", 0, 4, 64), Buffer("a", 1, 2, 32), Buffer("b", 2, 4, 16), Buffer("c", 0, 1, 8)]


@pytest.mark.parametrize("planner", ["bump", "liveness", "best"])
def test_a_plans_offsets_read_like_a_dict_in_the_buffers_order(planner):
    result = get_planner(planner).plan(BUFFERS, 8)
    offsets = result.offsets
    assert isinstance(offsets, Offsets)
    as_dict = {name: offsets[name] for name in ["w", "a", "b", "c"]}
    assert list(offsets) == ["w", "a", "b", "c"] and len(offsets) == 4
    assert list(offsets.values()) == list(as_dict.values()) and list(offsets.items()) == list(as_dict.items())
    assert offsets == as_dict and as_dict == offsets and offsets != {**as_dict, "w": 1}
    assert "a" in offsets and "z" not in offsets and offsets.get("z") is None
    assert ("a", as_dict["a"]) in offsets.items() and as_dict["a"] in offsets.values()
    with pytest.raises(KeyError):
        offsets["z"]
    assert all(type(value) is int for value in offsets.values())
    json.dumps(dict(offsets))
    assert pickle.loads(pickle.dumps(offsets)) == offsets
    validate_plan(BUFFERS, offsets, 8, result.arena_bytes)


def test_offsets_from_an_int64_array_are_python_ints():
    offsets = Offsets(["x", "y"], np.array([0, 2**40], dtype=np.int64))
    assert offsets["y"] == 2**40 and type(offsets["y"]) is int
    assert [type(value) for value in offsets.values()] == [int, int]
    assert repr(offsets) == "Offsets({'x': 0, 'y': 1099511627776})"
    with pytest.raises(ValueError, match="2 offsets for 1 names"):
        Offsets(["x"], [0, 1])


def test_offsets_in_order_reads_side_by_side_or_looks_up():
    names = ["x", "y", "z"]
    offsets = Offsets(names, [0, 8, 16])
    assert offsets.in_order(names) == [0, 8, 16]
    assert offsets.in_order(["x", "y", "z"]) == [0, 8, 16]  # equal names, another list
    assert offsets.in_order(["z", "y", "x"]) is None and offsets.in_order(["x", "y"]) is None
    assert offsets_in_order(["z", "x"], offsets) == [16, 0]
    assert offsets_in_order(["z", "x"], {"x": 1, "z": 2}) == [2, 1]
    with pytest.raises(KeyError):
        offsets_in_order(["q"], offsets)
