"""The table of `compare` and `compare --training`: one row per target, ranked against the
smallest arena, with `--execute`'s run column."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

from rlxir.cli import progress
from rlxir.cli.host_memory import HostMemoryError, check_interpreter_memory
from rlxir.cli.output_files import atomic_output
from rlxir.cli.reports import human_bytes
from rlxir.cli.target_options import cli_target
from rlxir.compiler.compile import FitReport
from rlxir.targets.devices import format_bytes
from rlxir.errors import RlxError
from rlxir.targets.target import Target, available_targets
from rlxir.compiler.workers import available_cores, map_in_order

Row = tuple[dict, FitReport]  # a row's JSON fields, and the verdict they were made from

# The field of a row that carries its plan for `compare --html` (taken out before printing).
PLAN_PAGE_KEY = "plan_page"


class SharedReference:
    """The interpreter's run of a graph, made on first use and shared by every target;
    refused (`HostMemoryError`) while the host memory it needs is not available."""

    def __init__(self, graph, bindings: dict, training: bool = False, optimizer=None):
        self.graph, self.bindings, self.training, self.optimizer = graph, bindings, training, optimizer
        self._run = None

    def get(self):
        if self._run is None:
            from rlxir.executor import reference_run
            from rlxir.executor.check import grad_of

            bound = self.graph.bind(self.bindings) if self.bindings else self.graph
            computed = grad_of(bound, self.optimizer) if self.training else bound  # differentiated once
            check_interpreter_memory(computed)
            progress.show("running the reference interpreter (once, for every target) ...")
            self._run = reference_run(computed)
        return self._run


def row_fields(verdict: FitReport, **numbers) -> Row:
    """A compare row: the target, `numbers` in order, then the verdict's fields."""
    return {"target": verdict.target.name, **numbers, **verdict.to_json(brief=True)}, verdict


def compare_targets(args: argparse.Namespace, make_row: Callable[[Target], Row], doing: str, byte_columns) -> int:
    """One row per target (`make_row(target)`), ranked against the smallest arena, printed
    as JSON or as a table whose byte columns are `byte_columns` ((title, key), ...)."""
    names = args.targets.split(",") if args.targets else sorted(available_targets())
    targets = [cli_target(name.strip(), args) for name in names]
    jobs = 1 if getattr(args, "execute", False) else (getattr(args, "jobs", None) or available_cores())
    if jobs > 1 and len(targets) > 1:
        progress.show(f"{doing} {len(targets)} targets, {min(jobs, len(targets))} at a time ...")
        made = map_in_order(make_row, targets, jobs)
    else:
        made = []
        began = time.perf_counter()
        for number, target in enumerate(targets, 1):
            with progress.prefixed(f"[{number}/{len(targets)}, {time.perf_counter() - began:.0f} s] {target.name}: "):
                progress.show(f"{doing} {target.name} ...")
                made.append(make_row(target))
    progress.clear()
    pages = [row.pop(PLAN_PAGE_KEY) for row, _ in made if PLAN_PAGE_KEY in row]
    if pages:
        write_plan_page(args.html, pages)
    rows = [row for row, _ in made]
    arenas = [row["arena_bytes"] for row in rows if row["arena_bytes"] is not None]
    best = min(arenas) if arenas else None
    for row in rows:
        row["ratio_to_best"] = round(row["arena_bytes"] / best, 4) if best and row["arena_bytes"] is not None else None
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    _print_table(made, byte_columns)
    if pages:
        print(f"\npage written to {args.html}")
    failed = [row for row in rows if row.get("run_matched") is False]
    if failed:
        causes = {row["run_cause"] for row in failed}
        listed = ", ".join(f"{row['target']} ({row['run_cause']})" for row in failed)
        expected = ("every target's plan to run and match (a defect is in its pipeline or planner)" if "defect" in causes
                    else "every target's plan to run and match (no planner defect: see the run column)")
        print(RlxError(f"the arena run did not match the reference on {listed}", expected=expected).render(),
              file=sys.stderr)
        return 1
    return 0


def write_plan_page(path: str, entries: list[dict]) -> None:
    """Write the plans `entries` (`rlxir.cli.plan_page.plan_page_entry`) as one HTML page, atomically."""
    from rlxir.cli.plan_page import render_plan_page

    with atomic_output(path) as handle:
        handle.write(render_plan_page(entries))


def _print_table(made: list[Row], byte_columns) -> None:
    titles = "".join(f" {title:>24}" for title, _ in byte_columns)
    executed = any("run" in row for row, _ in made)
    header = f"{'target':<8} {'planner':<9} {'nodes':>7}{titles} {'x best':>7} {'ceiling':>12} {'fits':<20}"
    header = (header + " run") if executed else header.rstrip()
    print(header)
    print("-" * len(header))
    for row, verdict in made:
        ceiling = format_bytes(row["ceiling_bytes"]) if row["ceiling_bytes"] is not None else "none"
        ratio = f"{row['ratio_to_best']:.2f}" if row["ratio_to_best"] is not None else "-"
        values = "".join(f" {human_bytes(row[key]):>24}" for _, key in byte_columns)
        fits = short_verdict(verdict)
        line = f"{row['target']:<8} {row['planner']:<9} {row['nodes']:>7}{values} {ratio:>7} {ceiling:>12} {fits:<20}"
        print(f"{line} {row['run']}" if executed else line.rstrip())


def short_verdict(verdict: FitReport) -> str:
    """A compare cell: ``yes``, ``no (past ceiling)``, ``no (over budget)`` or ``unknown (no budget)``."""
    if verdict.fits is True:
        return "yes"
    if verdict.fits == "unknown":
        return "unknown (no budget)"
    return "no (past ceiling)" if verdict.refused else "no (over budget)"


def with_execution(made: Row, run_check) -> Row:
    """Add the --execute columns to a compare row: `run_check()` gives the ExecutionCheck;
    a plan past the ceiling is not run, nor one whose host memory is not available
    (`run_check` raising `HostMemoryError`)."""
    row, verdict = made
    if verdict.refused:
        row["run"], row["run_matched"], row["run_cause"] = "not run (past the ceiling)", None, None
        return made
    try:
        check = run_check()
    except HostMemoryError as error:
        row["run"], row["run_matched"], row["run_cause"] = f"not run ({error.message})", None, None
        return made
    row["run"], row["run_matched"], row["run_cause"] = check.verdict, check.matched, check.cause
    row["run_outside_bytes"] = check.run.outside_peak_bytes
    return made
