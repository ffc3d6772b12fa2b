"""The arena executor against the plain interpreter: seconds, memory outside the arena, match.

Usage: python bench/executor.py [--targets cpu cuda ...] [--examples gpt2_small ...] [--device gpu]

For each example (at its bench bindings, batch 1) and target: the interpreter's seconds on
the original graph, the arena run's seconds on the target's compiled graph (poison checks
on), their ratio (the target: at most 3x on gpt2_small), the bytes held outside the arena
and the side buffers at the peak and their share of the arena (the target: at most 10%),
and whether the outputs matched. With --device gpu the same compiled graph also runs with
CuPy on the GPU: its seconds, CuPy's bytes outside the arena, NVML's device bytes in use at
the peak beyond what was in use before, and whether its outputs equal the NumPy run's.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from functools import partial
from pathlib import Path

import numpy as np

import rlxir
from rlxir.targets.devices import format_bytes

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
BINDINGS = {"mlp": {}, "gpt2_block": {"S": 128}, "gpt2_small": {"S": 128}, "mamba_block": {"S": 128},
            "mamba_lm": {"S": 128}, "resnet": {}}


def timed(function):
    start = time.perf_counter()
    value = function()
    return value, time.perf_counter() - start


def same_outputs(first: dict, second: dict) -> bool:
    return all(np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True) for a, b in zip(first.values(), second.values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", default=["cpu", "cuda", "rocm", "metal", "gpu", "vulkan"])
    parser.add_argument("--examples", nargs="+", default=list(BINDINGS))
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"NumPy {np.__version__}; batch {args.batch}\n")
    header = (f"{'example':<12} {'target':<7} {'arena':>11} {'interp s':>9} {'arena s':>8} {'ratio':>6} "
              f"{'outside':>10} {'share':>6} {'match':<6}")
    if args.device == "gpu":
        header += f" {'gpu s':>7} {'gpu outside':>11} {'nvml extra':>11} {'= numpy':<7}"
    print(header)
    print("-" * len(header))
    for example in args.examples:
        graph = rlxir.parse_file(EXAMPLES / f"{example}.rlx").main
        graph = graph.bind({**BINDINGS.get(example, {}), **({"B": args.batch} if "B" in graph.symbols else {})})
        reference = rlxir.reference_run(graph)
        _, interpret_seconds = timed(partial(rlxir.interpret, graph, reference.inputs, reference.params))
        for target in args.targets:
            result = rlxir.compile(graph, target)
            check, _ = timed(partial(rlxir.check_execution, graph, result, reference=reference))
            run = check.run
            line = (f"{example:<12} {target:<7} {format_bytes(run.arena_bytes):>11} {interpret_seconds:>9.3f} "
                    f"{run.seconds:>8.3f} {run.seconds / interpret_seconds:>6.2f} "
                    f"{format_bytes(run.outside_peak_bytes):>10} {run.outside_peak_bytes / run.arena_bytes:>6.1%} "
                    f"{'yes' if check.matched else 'NO':<6}")
            if args.device == "gpu":
                feeds = (reference.inputs, reference.params)
                names = set(result.graph.inputs()), set(result.graph.params())
                gpu = rlxir.run_in_arena(result, {k: v for k, v in feeds[0].items() if k in names[0]},
                                         {k: v for k, v in feeds[1].items() if k in names[1]}, device="gpu")
                extra = (gpu.device_used_peak or 0) - (gpu.device_used_before or 0)
                line += (f" {gpu.seconds:>7.3f} {format_bytes(gpu.outside_peak_bytes):>11} "
                         f"{format_bytes(extra):>11} {'yes' if same_outputs(gpu.outputs, run.outputs) else 'NO':<7}")
            print(line, flush=True)


if __name__ == "__main__":
    main()
