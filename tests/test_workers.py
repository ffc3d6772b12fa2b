"""Work spread over processes gives the serial loop's results, order and errors."""

from __future__ import annotations

import os

import pytest

from rlxir.workers import available_cores, can_fork, map_in_order

needs_fork = pytest.mark.skipif(not can_fork(), reason="worker processes are forked")


def square_with_pid(item: int) -> tuple[int, int]:
    return item * item, os.getpid()


class PickyError(Exception):
    """An error whose constructor takes two arguments: it cannot cross a process boundary."""

    def __init__(self, item: int, why: str):
        super().__init__(f"{item}: {why}")
        self.item = item


def fails_on_three(item: int) -> int:
    if item == 3:
        raise PickyError(item, "three is refused")
    return item


def test_available_cores_is_at_least_one():
    assert available_cores() >= 1


@needs_fork
def test_results_come_in_the_order_of_the_items_from_other_processes():
    results = map_in_order(square_with_pid, list(range(8)), jobs=2)
    assert [value for value, _ in results] == [item * item for item in range(8)]
    assert {pid for _, pid in results} - {os.getpid()}


def test_one_job_is_the_serial_loop_in_this_process():
    results = map_in_order(square_with_pid, [1, 2, 3], jobs=1)
    assert results == [(1, os.getpid()), (4, os.getpid()), (9, os.getpid())]


@needs_fork
def test_a_failing_item_raises_what_the_serial_loop_raises():
    with pytest.raises(PickyError) as caught:
        map_in_order(fails_on_three, list(range(6)), jobs=2)
    assert caught.value.item == 3 and str(caught.value) == "3: three is refused"


@needs_fork
def test_work_reads_what_this_process_holds_without_pickling_it():
    held = {"graph": object()}  # an object pickle would copy; a forked worker sees it as is
    results = map_in_order(lambda key: type(held[key]).__name__, ["graph", "graph"], jobs=2)
    assert results == ["object", "object"]
