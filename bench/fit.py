"""Seconds per plan and plans per fit, for the examples at batch 1..256, and the fit with
several plans per round against the serial fit.

Usage: python bench/fit.py [--targets cpu cuda rocm ...] [--examples gpt2_small mamba_block ...]
                           [--stack 10000 ...] [--jobs N] [--max-batch 256]

First, without planning anything: the rounds and plans of the search with 1, 2, 4, 8 and 16
jobs, averaged over every answer from none to --max-batch (arenas that grow), each answer
counted once (uniform), or 1/answer times (log-uniform: as likely in 1..2 as in 128..256).

Then, for each example (and each bench/parse.py GPT-style stack of `--stack` statements) and
target: the seconds of one plan (pipeline + planning) at batch 1, 16 and 256, and a whole
`fit` up to batch 256 on a 24 GiB device (headroom 0.6): the batch it finds, how many plans
it took (at most 2 ceil(log2 256) + 2 = 18), and its seconds. Then the same fit with
`--jobs N` (default: the cores available), run right after it: its plans and rounds, its
wall-clock seconds and its CPU seconds (parent and workers) as fractions of the serial
fit's, and whether the answer (batch, arena, reason) is the serial one (it must be).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from parse import stack_text  # noqa: E402  (bench/parse.py)

import rlxir  # noqa: E402
from rlxir.compiler.compile import plan_arena_bytes  # noqa: E402
from rlxir.compiler.fit import Trial, fit_batch, plan_bound, search_batches  # noqa: E402
from rlxir.compiler.workers import available_cores  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
BINDINGS = {"mlp": {}, "gpt2_block": {"S": 128}, "gpt2_small": {"S": 128}, "mamba_block": {"S": 128},
            "resnet": {}}


def seconds_per_plan(graph, target, batch, others) -> tuple[float, int]:
    start = time.perf_counter()
    arena = plan_arena_bytes(graph.bind({"B": batch}), target, others)
    return time.perf_counter() - start, arena


def cpu_seconds() -> float:
    """CPU seconds of this process and of its finished children (the workers, once joined)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def timed_fit(graph, target, others, max_batch: int, jobs: int):
    """(fit result, wall seconds, CPU seconds) of one fit."""
    wall, cpu = time.perf_counter(), cpu_seconds()
    result = fit_batch(target, max_batch, 0.6, lambda batch: graph.bind({"B": batch}), vram=24 << 30,
                       bindings=others, jobs=jobs)
    return result, time.perf_counter() - wall, cpu_seconds() - cpu


def search_averages(max_batch: int, jobs: int, weight) -> tuple[float, float]:
    """(mean rounds, mean plans) of the search over the answers 0..max_batch (0: nothing
    fits), each counted `weight(answer)` times."""
    rounds = plans = total = 0.0
    for answer in range(max_batch + 1):
        def plan(batch, answer=answer):
            return Trial(batch, batch, batch <= answer)

        search = search_batches(max_batch, jobs, plan, lambda batches: [plan(batch) for batch in batches])
        rounds += weight(answer) * search.rounds
        plans += weight(answer) * len(search.tried)
        total += weight(answer)
    return rounds / total, plans / total


def graphs(args):
    """(name, graph, other bindings) for each example and stack asked for."""
    for example in args.examples:
        yield example, rlxir.parse_file(EXAMPLES / f"{example}.rlx").main, BINDINGS[example]
    for statements in args.stack:
        yield f"stack{statements}", rlxir.parse(stack_text(statements)).main, {"S": 128}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", default=["cpu", "cuda", "rocm", "metal", "gpu", "vulkan"])
    parser.add_argument("--examples", nargs="*", default=list(BINDINGS))
    parser.add_argument("--stack", type=int, nargs="*", default=[], metavar="STATEMENTS")
    parser.add_argument("--max-batch", type=int, default=256)
    parser.add_argument("--jobs", type=int, default=available_cores())
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores ({available_cores()} available), Python "
          f"{platform.python_version()}; fit up to batch {args.max_batch} on 24 GiB, headroom 0.6 (at most "
          f"{plan_bound(args.max_batch)} rounds); parallel fits with --jobs {args.jobs}\n")
    print(f"{'':>4} {'answers uniform':>23} {'answers log-uniform':>23}")
    print(f"{'jobs':>4} {'mean rounds':>11} {'mean plans':>11} {'mean rounds':>11} {'mean plans':>11}")
    for jobs in (1, 2, 4, 8, 16):
        uniform = search_averages(args.max_batch, jobs, lambda answer: 1.0)
        log_uniform = search_averages(args.max_batch, jobs, lambda answer: 1.0 / answer if answer else 0.0)
        print(f"{jobs:>4} {uniform[0]:>11.1f} {uniform[1]:>11.1f} {log_uniform[0]:>11.1f} {log_uniform[1]:>11.1f}")
    print()
    header = (f"{'example':<12} {'target':<7} {'plan s @1':>9} {'@16':>7} {'@256':>7}  {'fit batch':>9} "
              f"{'plans':>5} {'fit s':>7}  {'plans':>5} {'rounds':>6} {'wall x':>6} {'CPU x':>6} {'same':>5}")
    print(header)
    print("-" * len(header))
    for name, graph, others in graphs(args):
        for target in args.targets:
            times = [seconds_per_plan(graph, target, batch, others)[0] for batch in (1, 16, 256)]
            serial, serial_s, serial_cpu = timed_fit(graph, target, others, args.max_batch, 1)
            parallel, parallel_s, parallel_cpu = timed_fit(graph, target, others, args.max_batch, args.jobs)
            same = (parallel.batch, parallel.arena_bytes, parallel.reason) == \
                (serial.batch, serial.arena_bytes, serial.reason)
            batch = serial.batch if serial.batch is not None else "none"
            print(f"{name:<12} {target:<7} {times[0]:>9.3f} {times[1]:>7.3f} {times[2]:>7.3f}  {batch!s:>9} "
                  f"{len(serial.tried):>5} {serial_s:>7.2f}  {len(parallel.tried):>5} {parallel.rounds:>6} "
                  f"{parallel_s / serial_s:>6.2f} {parallel_cpu / serial_cpu:>6.2f} {str(same):>5}", flush=True)


if __name__ == "__main__":
    main()
