"""Independent pieces of work spread over worker processes, with the serial loop's results.

`compare` compiles one graph for several targets; each target's pipeline and plan is a
few seconds of pure-Python work at 10^5 nodes and shares nothing with the others, so on a
machine with several cores they can run side by side. The workers are forked, so they
inherit the parsed graph, loaded plugins and caches as they are, and nothing but each
item's index (or a small item) and its result (a small dict) is pickled. Where processes
cannot be forked the work runs serially.

`fit` plans a few candidate batches per round of its search, over several rounds, some of
which the search may never need: one pool (`Workers`) serves every round, and a failed
item is reported as `WORKER_FAILED` instead of being computed again, so that the caller
computes it itself only if it turns out to need it.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import BrokenExecutor, ProcessPoolExecutor

# The function of the pool under way: forked workers read it from here (nothing to pickle).
_WORK: Callable | None = None


class WorkerFailure:
    """The place of an item whose worker returned no result (an error, an unpicklable
    result, a crashed worker): only `WORKER_FAILED`, its one instance, is used."""

    def __repr__(self) -> str:
        return "WORKER_FAILED"

    def __reduce__(self) -> str:
        return "WORKER_FAILED"  # unpickled as the one instance, so `is` recognises it


WORKER_FAILED = WorkerFailure()


def available_cores() -> int:
    """The cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # no affinity masks on this OS
        return os.cpu_count() or 1


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


class Workers:
    """Up to `jobs` forked processes computing `function`, for as long as the `with` block;
    never more processes than the cores available (items beyond them wait their turn).

    They are forked when first needed, from this process as it is then, so `function` and
    what it reads are inherited, never pickled; items and results are. One pool at a time.
    Without fork, or with `jobs` 1, `map` is the serial loop.
    """

    def __init__(self, function: Callable, jobs: int):
        self.function, self.jobs = function, jobs
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> Workers:
        global _WORK
        if self.jobs > 1 and can_fork():
            _WORK = self.function
            processes = min(self.jobs, available_cores())
            self._pool = ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("fork"))
        return self

    def __exit__(self, *exc_info) -> None:
        global _WORK
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool, _WORK = None, None

    def map(self, items: Sequence, rerun_failures: bool = True) -> list:
        """``[function(item) for item in items]``, in the order of `items` whatever order the
        workers finish in. An item whose worker fails (an error, an unpicklable result, a
        crashed worker) is computed again in this process, so it raises exactly what the
        serial loop would, at the same item; with `rerun_failures` False its place holds
        `WORKER_FAILED` instead and the other items are all computed. A single item, like
        the serial loop, is computed here and raises its errors as they come."""
        if self._pool is None or len(items) <= 1:
            return [self.function(item) for item in items]
        try:
            futures = [self._pool.submit(_run_item, item) for item in items]
        except BrokenExecutor:  # a worker died in an earlier map: the pool takes no more work
            return [self.function(item) if rerun_failures else WORKER_FAILED for item in items]
        try:
            return [_result_or_rerun(future, self.function, item, rerun_failures)
                    for future, item in zip(futures, items)]
        except BaseException:
            for future in futures:  # later items no longer matter
                future.cancel()
            raise


def map_in_order(function: Callable, items: Sequence, jobs: int) -> list:
    """``[function(item) for item in items]``, computed in up to `jobs` worker processes
    (`Workers.map`, failed items computed again here). The items stay in this process:
    the workers are sent indices."""
    with Workers(lambda index: function(items[index]), min(jobs, len(items))) as workers:
        return workers.map(range(len(items)))


def _run_item(item):
    try:
        return _WORK(item)
    except Exception:  # raised again, unchanged, where this process computes the item (an
        return WORKER_FAILED  # error that cannot be unpickled would break the whole pool)


def _result_or_rerun(future, function: Callable, item, rerun: bool):
    try:
        result = future.result()
    except Exception:  # a crashed worker, a result that cannot be pickled
        result = WORKER_FAILED
    if result is WORKER_FAILED and rerun:
        return function(item)  # the serial computation raises the error itself
    return result
