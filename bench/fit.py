"""Seconds per plan and plans per fit, for the examples at batch 1..256.

Usage: python bench/fit.py [--targets cpu cuda rocm ...] [--examples gpt2_small mamba_block ...]

For each example and target: the seconds of one plan (pipeline + planning) at batch 1, 16
and 256, and a whole `fit` up to batch 256 on a 24 GiB device (headroom 0.6): the batch it
finds, how many plans it took (at most 2 ceil(log2 256) + 2 = 18), and its seconds.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import rlxir
from rlxir.compiler import plan_arena_bytes
from rlxir.fit import fit_batch, plan_bound

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
BINDINGS = {"mlp": {}, "gpt2_block": {"S": 128}, "gpt2_small": {"S": 128}, "mamba_block": {"S": 128},
            "resnet": {}}


def seconds_per_plan(graph, target, batch, others) -> tuple[float, int]:
    start = time.perf_counter()
    arena = plan_arena_bytes(graph.bind({"B": batch}), target, others)
    return time.perf_counter() - start, arena


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", default=["cpu", "cuda", "rocm", "metal", "gpu", "vulkan"])
    parser.add_argument("--examples", nargs="+", default=list(BINDINGS))
    parser.add_argument("--max-batch", type=int, default=256)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"fit up to batch {args.max_batch} on 24 GiB, headroom 0.6 (at most {plan_bound(args.max_batch)} plans)\n")
    header = (f"{'example':<12} {'target':<7} {'plan s @1':>9} {'@16':>7} {'@256':>7}  {'fit batch':>9} "
              f"{'plans':>5} {'fit s':>7}")
    print(header)
    print("-" * len(header))
    for example in args.examples:
        graph = rlxir.parse_file(EXAMPLES / f"{example}.rlx").main
        others = BINDINGS[example]
        for target in args.targets:
            times = [seconds_per_plan(graph, target, batch, others)[0] for batch in (1, 16, 256)]
            start = time.perf_counter()
            # fit_batch calls the lambda before the loop moves on, so its late binding is safe
            result = fit_batch(target, args.max_batch, 0.6, lambda batch: graph.bind({"B": batch}),  # noqa: B023
                               vram=24 << 30, bindings=others)
            fit_seconds = time.perf_counter() - start
            batch = result.batch if result.batch is not None else "none"
            print(f"{example:<12} {target:<7} {times[0]:>9.3f} {times[1]:>7.3f} {times[2]:>7.3f}  {batch!s:>9} "
                  f"{len(result.tried):>5} {fit_seconds:>7.2f}")


if __name__ == "__main__":
    main()
