"""Every planner on every shared planning instance: arena, lower bound, ratio, seconds.

Usage: python bench/planner.py [--data DIR] [--planner NAME ...] [--files GLOB ...]
                               [--alignment N] [--budget SECONDS] [--validate]
                               [--synthetic N ...] [--process] [--repeat N]

Walks every ``*.csv`` under DIR (default: ``../shared/data`` beside the repository), plans
each with each planner and prints one row per (file, planner): buffers, lower bound,
arena, arena / lower bound, the seconds of the plan call (reading the file is not
timed; with --repeat N the fastest of N calls) and those seconds as a multiple of a
lower-bound sweep of the same buffers measured in the same process just before (best of
three, or of N), the baseline that stays comparable when the machine is loaded. Then, for
the MiniMalloc "challenging" set, the geometric mean and the worst of arena / best known
arena per planner (the best known is the lower bound except on D and J,
where MiniMalloc's answers are 1,038,336 and 1,041,408).

--files keeps the files whose path relative to DIR matches one of the globs
(e.g. 'minimalloc/*/*' or '*resnet50*'); --validate also checks every plan.

--synthetic N adds two generated instances of N buffers (bench/synth.py's recipe, seed
1): ``generated/synthN`` with the recipe's defaults and ``generated/crowdedN`` with a fifth
of the buffers long-lived (65-5000 steps), so hundreds are live at once and the address
lists are long. They are written to a temporary folder and kept only for the run.

--process also times whole ``rlxir plan-csv FILE --planner best`` processes (start-up,
reading, planning, validating, exit) against the budget, one row per file.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rlxir.planning import PLANNERS, BestPlanner, get_planner, lower_bound, read_instance, validate_plan

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synth import synthetic_rows, write_instance  # noqa: E402  (bench/synth.py, beside this file)

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data"

# MiniMalloc's best answers where they are above the lower bound (shared/data/minimalloc/README.md).
BEST_KNOWN = {"D.1048576.csv": 1_038_336, "J.1048576.csv": 1_041_408}


def main(argv: list[str] | None = None) -> int:
    options = _parse(argv)
    with tempfile.TemporaryDirectory() as generated:
        return _run(options, Path(generated))


def _run(options: argparse.Namespace, generated: Path) -> int:
    files = _instance_files(options.data, options.files) + _generated_files(generated, options.synthetic)
    if not files:
        print(f"no instance files under {options.data} match {options.files}", file=sys.stderr)
        return 1
    planners = [get_planner(name) for name in options.planner]
    print(f"# {platform.python_implementation()} {platform.python_version()}, alignment {options.alignment}")
    print(f"{'file':<36} {'planner':<9} {'buffers':>8} {'lower bound':>16} {'arena':>16} {'ratio':>8} {'seconds':>8} {'x sweep':>8}")
    challenging: dict[str, list[float]] = {planner.name: [] for planner in planners}
    for path in files:
        buffers = read_instance(path)
        sweep_s = _sweep_seconds(buffers, options.alignment, max(3, options.repeat))
        for planner in planners:
            # The fastest of --repeat runs: load from other work only ever adds time.
            runs = [planner.plan(buffers, options.alignment, time_budget=options.budget) for _ in range(options.repeat)]
            result = min(runs, key=lambda run: run.seconds)
            if options.validate:
                validate_plan(buffers, result.offsets, options.alignment, result.arena_bytes)
            relative = _relative(path, options.data, generated)
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
    if options.process:
        _print_process_times(files, options, generated)
    return 0


def _generated_files(folder: Path, counts: list[int]) -> list[Path]:
    """The --synthetic instances, written as CSV under `folder`/generated."""
    (folder / "generated").mkdir(exist_ok=True)
    paths = []
    for count in counts:
        for name, long_share in (("synth", 0.01), ("crowded", 0.2)):
            path = folder / "generated" / f"{name}{count}.csv"
            write_instance(path, synthetic_rows(count, seed=1, long_share=long_share))
            paths.append(path)
    return paths


def _relative(path: Path, data: Path, generated: Path) -> str:
    root = generated if path.is_relative_to(generated) else data
    return path.relative_to(root).as_posix()


def _print_process_times(files: list[Path], options: argparse.Namespace, generated: Path) -> None:
    """Wall seconds of whole `rlxir plan-csv --planner best` processes against the budget."""
    budget = BestPlanner().default_budget if options.budget is None else options.budget
    command = [sys.executable, "-m", "rlxir", "plan-csv", "--planner", "best", "--alignment", str(options.alignment),
               "--time-budget", str(budget), "--json"]
    print(f"# whole plan-csv --planner best processes, budget {budget} s")
    print(f"{'file':<36} {'buffers':>8} {'ratio':>8} {'process s':>10} {'/ budget':>9}")
    for path in files:
        started = time.perf_counter()
        finished = subprocess.run([*command, str(path)], capture_output=True, text=True, check=True)
        seconds = time.perf_counter() - started
        report = json.loads(finished.stdout)
        print(f"{_relative(path, options.data, generated):<36} {report['buffers']:>8} {report['ratio']:>8.4f} "
              f"{seconds:>10.2f} {seconds / budget:>9.2f}", flush=True)


def _sweep_seconds(buffers, alignment: int, runs: int) -> float:
    """Seconds of the lower-bound sweep over `buffers` (best of `runs`; never zero)."""
    best = math.inf
    for _ in range(runs):
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
    parser.add_argument("--synthetic", nargs="+", type=int, default=[], metavar="N",
                        help="add generated synthN and crowdedN instances of N buffers")
    parser.add_argument("--process", action="store_true", help="also time whole plan-csv --planner best processes")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="plan N times and report the fastest run (the sweep: best of max(3, N))")
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
