"""Pass-pipeline throughput on generated transformer stacks.

Usage: python bench/passes.py [--sizes 10000 100000] [--pipeline SPEC] [--prepare SPEC]

For each size: the graph is parsed once (not timed here; see bench/parse.py), bound
(B=8, S=128) and run through a 10-pass pipeline with verification off; one row per pass
(seconds, nodes in and out) and the total. The default pipeline exercises every kind of
pass: expansion (unfuse), cleanups, broadcast legalisation, fusion, and lowering.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import rlxir  # noqa: E402
from parse import stack_text  # noqa: E402
from rlxir.pass_machinery.instruments import TimePasses  # noqa: E402
from rlxir.pass_machinery.pass_base import PassContext  # noqa: E402
from rlxir.pass_machinery.pipeline import parse_pipeline  # noqa: E402
from rlxir.targets.target import get_target  # noqa: E402

DEFAULT = ("unfuse,simplify,cse,const-fold,dce,legalize-broadcast,fuse{target=gpu},unfuse-regions,dce,"
           "lower{target=gpu}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--pipeline", default=DEFAULT)
    parser.add_argument("--prepare", metavar="SPEC", default="",
                        help="a pipeline run (untimed) before the measured one, e.g. 'unfuse' to start from primitives")
    args = parser.parse_args()
    pipeline = parse_pipeline(args.pipeline)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"pipeline ({len(pipeline)} passes): {pipeline.text()}\n")
    for size in args.sizes:
        graph = rlxir.parse(stack_text(size)).main.bind(B=8, S=128)
        if args.prepare:
            parse_pipeline(args.prepare).run(graph, PassContext(target=get_target("gpu")))
        timer = TimePasses()
        start = time.perf_counter()
        pipeline.run(graph, PassContext(target=get_target("gpu")), [timer])
        total = time.perf_counter() - start
        print(f"graph of {timer.rows[0][2]} nodes -> {len(graph)} nodes: {total:.2f} s")
        print(timer.table())
        print()


if __name__ == "__main__":
    main()
