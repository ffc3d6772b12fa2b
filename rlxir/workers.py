"""Independent pieces of work spread over worker processes, with the serial loop's results.

`compare` compiles one graph for several targets; each target's pipeline and plan is a
few seconds of pure-Python work at 10^5 nodes and shares nothing with the others, so on a
machine with several cores they can run side by side. The workers are forked, so they
inherit the parsed graph, loaded plugins and caches as they are, and nothing but each
result (a small dict) is pickled. Where processes cannot be forked the work runs serially.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor

# The work of the pool under way: forked workers read it from here (nothing to pickle).
_WORK: tuple[Callable, Sequence] | None = None


def available_cores() -> int:
    """The cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # no affinity masks on this OS
        return os.cpu_count() or 1


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def map_in_order(function: Callable, items: Sequence, jobs: int) -> list:
    """``[function(item) for item in items]``, computed in up to `jobs` worker processes.

    Results come in the order of `items`, whatever order the workers finish in. An item
    whose worker fails (an error, an unpicklable result, a crashed worker) is computed
    again in this process, so it raises exactly what the serial loop would, at the same
    item. Serial when `jobs` is 1, when there is a single item, or without fork.
    """
    jobs = min(jobs, len(items))
    if jobs <= 1 or not can_fork():
        return [function(item) for item in items]
    global _WORK
    _WORK = (function, items)
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            futures = [pool.submit(_run_item, index) for index in range(len(items))]
            try:
                return [_result_or_rerun(future, function, item) for future, item in zip(futures, items)]
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)  # later items no longer matter
                raise
    finally:
        _WORK = None


def _run_item(index: int):
    function, items = _WORK
    return function(items[index])


def _result_or_rerun(future, function: Callable, item):
    try:
        return future.result()
    except Exception:  # the serial computation raises the error itself, unchanged
        return function(item)
