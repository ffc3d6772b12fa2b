"""`best`'s canonical search alone, in Python and compiled, on MiniMalloc's challenging set.

Usage: python bench/search.py [--data DIR] [--nodes N] [--files GLOB ...]

For each instance, the same questions to both searches: "does a placement fit in C bytes?"
for C = the lower bound, 1.05x and 1.1x it, with each of the three preorder heuristics,
at most N nodes each (default 5000). Prints per instance the questions answered yes, the
nodes searched, the seconds of each search (the compiled one's first call in the process,
which loads or compiles the loop, is made before the clock starts) and their ratio, and
fails if any answer or node count differs. DIR defaults to ``../shared/data`` beside the
repository (the challenging set is also in tests/data/planning).
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))

from rlxir.planning import read_instance  # noqa: E402
from rlxir.planning.problem import Problem  # noqa: E402
from rlxir.planning.search import HEURISTICS, CanonicalSearch, preorder  # noqa: E402
from rlxir.planning.search_compiled import compiled_if_ready, prepare_compiled_search  # noqa: E402

CAPACITIES = (1.0, 1.05, 1.1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=REPOSITORY.parent / "shared" / "data")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--files", nargs="+", default=["*"], help="globs on the challenging set's file names")
    args = parser.parse_args(argv)
    if not prepare_compiled_search():
        print("the compiled search is not available here (Numba missing or turned off)", file=sys.stderr)
        return 1
    folder = args.data / "minimalloc" / "challenging"
    files = [p for p in sorted(folder.glob("*.csv")) if any(fnmatch.fnmatch(p.name, g) for g in args.files)]
    if not files:
        print(f"no instance under {folder}", file=sys.stderr)
        return 1
    print(f"{'instance':10} {'buffers':>7} {'yes':>4} {'nodes':>9} {'python s':>9} {'compiled s':>10} {'ratio':>6}")
    total_python = total_compiled = 0.0
    for path in files:
        problem = Problem.build(read_instance(path), 1)
        lower = int(max(problem.live_bytes_per_slot()))
        python = CanonicalSearch(problem)
        compiled = compiled_if_ready(CanonicalSearch(problem), problem)
        found = nodes = 0
        python_s = compiled_s = 0.0
        for share in CAPACITIES:
            for heuristic in HEURISTICS:
                capacity, order = int(lower * share), preorder(problem, heuristic)
                started = time.perf_counter()
                want = python.solve(capacity, order, args.nodes, float("inf"))
                middle = time.perf_counter()
                got = compiled.solve(capacity, order, args.nodes, float("inf"))
                compiled_s += time.perf_counter() - middle
                python_s += middle - started
                if got != want or compiled.nodes != python.nodes:
                    print(f"{path.name}: the searches differ at {capacity} with {heuristic}", file=sys.stderr)
                    return 1
                found += want is not None
                nodes += python.nodes
        total_python += python_s
        total_compiled += compiled_s
        print(f"{path.stem.split('.')[0]:10} {len(problem):7} {found:4} {nodes:9,} {python_s:9.3f} {compiled_s:10.4f} "
              f"{python_s / compiled_s:6.1f}")
    print(f"{'all':10} {'':7} {'':4} {'':9} {total_python:9.3f} {total_compiled:10.4f} {total_python / total_compiled:6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
