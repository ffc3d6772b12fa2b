"""Bytes per node of a parsed graph, and the seconds of parse and `rlxir compile` on it.

Usage: python bench/node_memory.py [--statements 100000] [--families gpt elem]
                                   [--compile-target rocm] [--no-compile]

One row per family (bench/parse.py's generators): the bytes `tracemalloc` sees held by
``rlxir.parse(text).main`` (everything the module keeps alive, the text itself excluded)
divided by its node count, the parse's CPU seconds, and the CPU seconds of
``rlxir compile FILE --target T --emit none -D B=1 -D S=128`` run in a fresh process (process
start and imports included, as a user runs it; a target that refuses the arena still
planned it, so its exit status 1 counts as a run). Bytes are measured with tracemalloc on and
timings with it off, in separate parses.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import rlxir  # noqa: E402
from parse import FAMILIES  # noqa: E402  (bench/parse.py)


def bytes_per_node(text: str) -> tuple[int, float]:
    """(nodes, bytes held per node) of the main graph parsed from `text`."""
    gc.collect()
    tracemalloc.start()
    start = tracemalloc.get_traced_memory()[0]
    module = rlxir.parse(text)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - start
    tracemalloc.stop()
    nodes = len(module.main)
    del module
    return nodes, held / nodes


def parse_seconds(text: str) -> float:
    gc.collect()
    begin = time.process_time()
    rlxir.parse(text)
    return time.process_time() - begin


def compile_seconds(text: str, target: str) -> float:
    """CPU seconds (user + system, the child's) of `rlxir compile` on `text`."""
    memory_disk = "/dev/shm" if os.path.isdir("/dev/shm") else None  # a full disk does not stop the run
    with tempfile.NamedTemporaryFile("w", suffix=".rlx", delete=False, dir=memory_disk) as handle:
        handle.write(text)
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run([sys.executable, "-m", "rlxir", "compile", handle.name, "--target", target, "--emit",
                               "none", "-D", "B=1", "-D", "S=128"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in (0, 1):  # 1: the target refuses the arena, after planning it
            raise RuntimeError(done.stderr.decode())
    finally:
        os.unlink(handle.name)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--statements", type=int, default=100_000)
    parser.add_argument("--families", nargs="+", default=["gpt", "elem"], choices=sorted(FAMILIES))
    parser.add_argument("--compile-target", default="rocm")
    parser.add_argument("--no-compile", action="store_true")
    args = parser.parse_args()
    print(f"{'family':8} {'nodes':>8} {'B/node':>8} {'parse s':>8} {'compile s':>10}")
    for family in args.families:
        text = FAMILIES[family](args.statements)
        nodes, per_node = bytes_per_node(text)
        parse = parse_seconds(text)
        compiled = "-" if args.no_compile else f"{compile_seconds(text, args.compile_target):.2f}"
        print(f"{family:8} {nodes:8d} {per_node:8.0f} {parse:8.2f} {compiled:>10}", flush=True)


if __name__ == "__main__":
    main()
