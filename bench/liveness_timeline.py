"""When each pass of a `liveness` plan runs, thread by thread: the compiled loops' calls
timed inside whole plans.

Usage: python bench/liveness_timeline.py [--buffers N] [--long-share F] [--file CSV]
                                         [--plans N] [--alignment N]

Plans one instance --plans times (default: 3) with `LivenessPlanner` and prints, for each
plan, one row per thread and compiled loop: its first call's start and its last call's
end (seconds from the plan's start), the calls, and the seconds spent inside them. On the
main thread the placement loop is the by-size pass (and, where the passes run one after
the other, the retry); in the second thread (`rlxir-peak`) the sweep loop is the pass
from the peak and the placement loop the peak-first retry. A gap between one thread's
rows is Python work (orders, set-up, results); a row ending after the main thread's is
what the plan waited for. The instance is bench/synth.py's recipe (seed 1) with
--long-share of the buffers long-lived (default 0.2: bench/planner.py's
``crowdedN``), or --file. The first plan in a process loads the compiled loops.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

from rlxir.planning import Buffer, lower_bound, read_instance
from rlxir.planning import kernels
from rlxir.planning.liveness import LivenessPlanner

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synth import synthetic_rows  # noqa: E402  (bench/synth.py, beside this file)

LOOPS = ("place_run", "sweep_run")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--buffers", type=int, default=200_000)
    parser.add_argument("--long-share", type=float, default=0.2)
    parser.add_argument("--file", type=Path, help="a MiniMalloc-format CSV instead of the generated instance")
    parser.add_argument("--plans", type=int, default=3)
    parser.add_argument("--alignment", type=int, default=1)
    options = parser.parse_args(argv)
    if options.file is not None:
        buffers = read_instance(options.file)
        what = str(options.file)
    else:
        buffers = [Buffer(str(row[0]), row[1], row[2], row[3])
                   for row in synthetic_rows(options.buffers, seed=1, long_share=options.long_share)]
        what = f"generated, {options.buffers} buffers, long share {options.long_share}"
    calls: list[tuple[str, str, float, float]] = []
    for loop in LOOPS:
        setattr(kernels, loop, _timed(getattr(kernels, loop), loop, calls))
    started = time.perf_counter()
    lower_bound(buffers, options.alignment)
    sweep_s = time.perf_counter() - started
    print(f"# {what}; lower-bound sweep {sweep_s:.3f} s (first, cold)")
    print(f"{'plan':>4} {'thread':<11} {'loop':<10} {'first s':>8} {'last s':>8} {'calls':>6} {'inside s':>9}")
    for plan in range(1, options.plans + 1):
        calls.clear()
        started = time.perf_counter()
        result = LivenessPlanner().plan(buffers, options.alignment)
        total = time.perf_counter() - started
        for thread, loop in sorted({(thread, loop) for thread, loop, _, _ in calls}):
            spans = [(begin, end) for name, kind, begin, end in calls if (name, kind) == (thread, loop)]
            print(f"{plan:>4} {thread:<11} {loop:<10} {spans[0][0] - started:>8.3f} {spans[-1][1] - started:>8.3f} "
                  f"{len(spans):>6} {sum(end - begin for begin, end in spans):>9.3f}")
        print(f"{plan:>4} {'plan':<11} {'':<10} {0.0:>8.3f} {total:>8.3f} {'':>6} {'':>9}  "
              f"arena {result.arena_bytes:,} ({result.ratio:.4f}x the bound)")
    return 0


def _timed(loop, name: str, calls: list[tuple[str, str, float, float]]):
    """`loop`, with each call's thread, start and end appended to `calls`."""

    def call(*args):
        begin = time.perf_counter()
        try:
            return loop(*args)
        finally:
            calls.append((threading.current_thread().name, name, begin, time.perf_counter()))

    return call


if __name__ == "__main__":
    raise SystemExit(main())
