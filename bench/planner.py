"""Every planner on every shared planning instance: arena, lower bound, ratio, seconds.

Usage: python bench/planner.py [--data DIR] [--planner NAME ...] [--files GLOB ...]
                               [--alignment N] [--budget SECONDS] [--validate]

Walks every ``*.csv`` under DIR (default: ``../shared/data`` beside the repository), plans
each with each planner and prints one row per (file, planner): buffers, lower bound,
arena, arena / lower bound, the seconds of the plan call (reading the file is not
timed) and those seconds as a multiple of a lower-bound sweep of the same buffers measured
in the same process just before (best of three), the baseline that stays comparable when
the machine is loaded. Then, for the MiniMalloc "challenging" set, the geometric mean and the worst of
arena / best known arena per planner (the best known is the lower bound except on D and J,
where MiniMalloc's answers are 1,038,336 and 1,041,408).

--files keeps the files whose path relative to DIR matches one of the globs
(e.g. 'minimalloc/*/*' or '*resnet50*'); --validate also checks every plan.
"""

from __future__ import annotations

import argparse
import fnmatch
import math
import platform
import sys
import time
from pathlib import Path

from rlxir.planning import PLANNERS, get_planner, lower_bound, read_instance, validate_plan

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data"

# MiniMalloc's best answers where they are above the lower bound (shared/data/minimalloc/README.md).
BEST_KNOWN = {"D.1048576.csv": 1_038_336, "J.1048576.csv": 1_041_408}


def main(argv: list[str] | None = None) -> int:
    options = _parse(argv)
    files = _instance_files(options.data, options.files)
    if not files:
        print(f"no instance files under {options.data} match {options.files}", file=sys.stderr)
        return 1
    planners = [get_planner(name) for name in options.planner]
    print(f"# {platform.python_implementation()} {platform.python_version()}, alignment {options.alignment}")
    print(f"{'file':<36} {'planner':<9} {'buffers':>8} {'lower bound':>16} {'arena':>16} {'ratio':>8} {'seconds':>8} {'x sweep':>8}")
    challenging: dict[str, list[float]] = {planner.name: [] for planner in planners}
    for path in files:
        buffers = read_instance(path)
        sweep_s = _sweep_seconds(buffers, options.alignment)
        for planner in planners:
            result = planner.plan(buffers, options.alignment, time_budget=options.budget)
            if options.validate:
                validate_plan(buffers, result.offsets, options.alignment, result.arena_bytes)
            relative = path.relative_to(options.data).as_posix()
            print(
                f"{relative:<36} {planner.name:<9} {len(buffers):>8} {result.lower_bound_bytes:>16,} "
                f"{result.arena_bytes:>16,} {result.ratio:>8.4f} {result.seconds:>8.3f} "
                f"{result.seconds / sweep_s:>8.1f}",
                flush=True,
            )
            if path.parent.name == "challenging":
                reference = BEST_KNOWN.get(path.name, result.lower_bound_bytes)
                challenging[planner.name].append(result.arena_bytes / reference)
    _print_challenging_summary(challenging)
    return 0


def _sweep_seconds(buffers, alignment: int) -> float:
    """Seconds of the lower-bound sweep over `buffers` (best of three; never zero)."""
    best = math.inf
    for _ in range(3):
        start = time.perf_counter()
        lower_bound(buffers, alignment)
        best = min(best, time.perf_counter() - start)
    return max(best, 1e-6)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder searched for *.csv instances")
    parser.add_argument("--planner", nargs="+", default=list(PLANNERS), choices=list(PLANNERS))
    parser.add_argument("--files", nargs="+", default=["*"], help="globs on paths relative to --data")
    parser.add_argument("--alignment", type=int, default=1)
    parser.add_argument("--budget", type=float, default=None, help="time budget of 'best' (default: its own)")
    parser.add_argument("--validate", action="store_true", help="check every plan with validate_plan")
    return parser.parse_args(argv)


def _instance_files(data: Path, globs: list[str]) -> list[Path]:
    files = sorted(data.rglob("*.csv"))
    return [path for path in files if any(fnmatch.fnmatch(path.relative_to(data).as_posix(), g) for g in globs)]


def _print_challenging_summary(challenging: dict[str, list[float]]) -> None:
    for name, ratios in challenging.items():
        if not ratios:
            continue
        geomean = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(
            f"# challenging ({len(ratios)} files), {name}: arena / best known "
            f"geomean {geomean:.4f}, worst {max(ratios):.4f}"
        )


if __name__ == "__main__":
    sys.exit(main())
