"""Work spread over processes gives the serial loop's results, order and errors."""

from __future__ import annotations

import os

import pytest

from rlxir.compiler.workers import WORKER_FAILED, Workers, available_cores, can_fork, map_in_order

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


@needs_fork
def test_without_reruns_a_failed_item_is_marked_and_the_others_computed():
    with Workers(fails_on_three, 2) as workers:
        assert workers.map(list(range(6)), rerun_failures=False) == [0, 1, 2, WORKER_FAILED, 4, 5]


@needs_fork
def test_one_pool_serves_several_maps_and_a_single_item_stays_here():
    with Workers(square_with_pid, 2) as workers:
        first = workers.map([1, 2, 3, 4])
        second = workers.map([5, 6, 7, 8])
        alone = workers.map([9])
    assert [value for value, _ in first + second] == [1, 4, 9, 16, 25, 36, 49, 64]
    assert {pid for _, pid in first + second} - {os.getpid()}
    assert alone == [(81, os.getpid())]


PARENT = os.getpid()


def dies_in_a_worker_on_two(item: int) -> int:
    if item == 2 and os.getpid() != PARENT:
        os._exit(1)  # a crash, not an error: the pool breaks
    return item * 10


@needs_fork
def test_a_crashed_worker_leaves_its_items_and_later_maps_to_this_process():
    with Workers(dies_in_a_worker_on_two, 2) as workers:
        assert workers.map([1, 2, 3]) == [10, 20, 30]
        assert workers.map([4, 5]) == [40, 50]
        assert workers.map([6, 7], rerun_failures=False) == [WORKER_FAILED, WORKER_FAILED]


@needs_fork
def test_never_more_processes_than_cores():
    items = list(range(8 * available_cores() + 8))
    with Workers(square_with_pid, jobs=len(items)) as workers:
        results = workers.map(items)
    assert [value for value, _ in results] == [item * item for item in items]
    assert len({pid for _, pid in results} - {os.getpid()}) <= available_cores()
