"""Pieces of the compile reports (`compile` and `compile --training`) and their exit status.

The verdict itself is `rlxir.compiler.compile.FitReport`; this module only writes it down.
"""

from __future__ import annotations

import argparse
import json
import sys

from rlxir.compiler.compile import FitReport
from rlxir.targets.devices import format_bytes
from rlxir.ir.graph import Graph
from rlxir.compiler.memory_plan import MemoryPlan
from rlxir.ir.printer import print_graph
from rlxir.targets.target import Target


def human_bytes(count: int | None) -> str:
    """``2168128 B (2.07 MiB)``, or ``-`` for a number not known."""
    return "-" if count is None else f"{count} B ({format_bytes(count)})"


def stages_json(stages) -> list[dict]:
    """What each pass of the pipeline did, for a JSON report."""
    return [{"pass": stage.spec, "nodes_before": stage.nodes_before, "nodes_after": stage.nodes_after,
             "seconds": round(stage.seconds, 6)} for stage in stages]


def print_report_head(args: argparse.Namespace, target: Target, before: Graph | None, bindings) -> None:
    """--emit mir (the graph `before` the pipeline, given when --emit is mir),
    --print-pipeline and the target line."""
    if args.emit == "mir":
        print(print_graph(before))
    if args.print_pipeline:
        print(f"pipeline  {target.pipeline}\n")
    bound = ", ".join(f"{symbol}={value}" for symbol, value in bindings.items()) or "none"
    print(f"target {target.name} ({target.description}); symbols {bound}")


def print_stage_table(stages, title: str) -> None:
    width = max((len(stage.spec) for stage in stages), default=10)
    print(f"\n  {title:<{width}}  {'nodes in':>9}  {'nodes out':>9}")
    for stage in stages:
        print(f"  {stage.spec:<{width}}  {stage.nodes_before:>9}  {stage.nodes_after:>9}")
    print()


def print_lower_bound(plan: MemoryPlan, width: int) -> None:
    print(f"{'lower bound':<{width}}{human_bytes(plan.lower_bound_bytes)}  (planner efficiency "
          f"{plan.efficiency:.1%}, {plan.planner}, alignment {plan.alignment}, sizing {plan.sizing})")


def print_side_buffers(side_buffers, width: int) -> None:
    for name, size in side_buffers.items():
        print(f"{'side buffer':<{width}}{name} {human_bytes(size)} (outside the arena)")


def print_verdict(verdict: FitReport, width: int) -> None:
    """The ceiling, budget and fits lines, labels padded to `width`."""
    ceiling = verdict.target.arena_ceiling
    print(f"{'ceiling':<{width}}{human_bytes(ceiling) if ceiling is not None else 'none (64-bit)'}")
    print(f"{'budget':<{width}}{verdict.budget.explain()}")
    print(f"{'fits':<{width}}{verdict.text()}")


def print_report_tail(args: argparse.Namespace, after: Graph, plan: MemoryPlan) -> None:
    """--emit lir (the graph `after` the pipeline) or --emit plan (every buffer)."""
    if args.emit == "lir":
        print()
        print(print_graph(after))
    if args.emit == "plan":
        print()
        print(plan.table(limit=None))


def print_json_report(args: argparse.Namespace, report: dict, plan: MemoryPlan) -> None:
    if args.emit == "plan":
        report["plan"] = plan.to_json()
    print(json.dumps(report, indent=2))


def verdict_exit(verdict: FitReport, what: str) -> int:
    """Exit status of a compile report: 1 with one diagnostic when the arena is refused or over
    a known budget (the report is already printed), else 0."""
    error = verdict.error(what)
    if error is None:
        return 0
    print(error.render(), file=sys.stderr)
    return 1
