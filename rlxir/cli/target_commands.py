"""`rlxir compile`, `fit`, `compare`, `targets`, `plan` and `plan-csv`.

compile, fit and compare share one code path per target (rlxir.compiler): what `fit`
reports for a batch is exactly what `compile` plans at that batch.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from rlxir.cli import progress
from rlxir.cli.main import UsageError
from rlxir.cli.options import add_input_options, bindings_from, load_module, positive_int, symbol_binding, time_budget
from rlxir.cli.output_files import atomic_output, checked_output_file
from rlxir.compiler import (CompileOptions, CompileResult, exceeds_ceiling, fit_verdict, plan_exec_graph,
                            prepare_exec_graph, verdict_text)
from rlxir.devices import format_bytes, parse_bytes
from rlxir.errors import Location, RlxError
from rlxir.fit import arena_budget, fit_batch
from rlxir.planning import PLANNERS
from rlxir.printer import print_graph
from rlxir.pass_base import load_plugin
from rlxir.pipeline import parse_pipeline
from rlxir.target import Target, available_targets, get_target
from rlxir.workers import available_cores, map_in_order


def _bytes_arg(text: str) -> int:
    try:
        return parse_bytes(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _headroom(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"headroom must be in (0, 1], got {text}")
    return value


def _add_planner_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--planner", choices=sorted(PLANNERS), help="plan with this planner instead of the target's")
    parser.add_argument("--alignment", type=positive_int, metavar="N", help="alignment in bytes instead of the target's")
    parser.add_argument("--sizing", choices=("dtype", "f32"), help="bytes per element: the dtype's, or 4 for all")
    parser.add_argument("--time-budget", type=time_budget, metavar="S", help="seconds for the best planner (default 4.5)")


def _add_pipeline_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--insert-after", metavar="PASS=SPEC", action="append", default=[],
                        help="run SPEC (passes with options) after PASS in the target's pipeline (repeatable)")
    parser.add_argument("--insert-before", metavar="PASS=SPEC", action="append", default=[],
                        help="run SPEC before PASS in the target's pipeline (repeatable)")
    parser.add_argument("--plugin", metavar="MODULE", action="append", default=[],
                        help="import MODULE first so the passes it registers can be inserted (repeatable)")


def _anchor_and_spec(flag: str, item: str) -> tuple[str, str]:
    anchor, equals, spec = item.partition("=")
    if not equals or not anchor.strip() or not spec.strip():
        raise UsageError(f"{flag} takes PASS=SPEC, e.g. fuse=mul-by-two-to-add; got {item!r}")
    return anchor.strip(), spec.strip()


def cli_target(name: str, args: argparse.Namespace) -> Target:
    """The target `name`, with the pipeline insertions and plugins the options ask for.

    The result keeps the target's name; its pipeline is the target's with SPEC inserted, so
    compile, fit, compare and plan all run the extended pipeline the same way.
    """
    target = get_target(name)
    for module in getattr(args, "plugin", []):
        load_plugin(module)
    pipeline = parse_pipeline(target.pipeline)
    for item in getattr(args, "insert_before", []):
        pipeline = pipeline.insert_before(*_anchor_and_spec("--insert-before", item))
    for item in getattr(args, "insert_after", []):
        pipeline = pipeline.insert_after(*_anchor_and_spec("--insert-after", item))
    if pipeline.text() == target.pipeline:
        return target
    return target.derive(target.name, pipeline=pipeline.text())


def _add_budget_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--vram", type=_bytes_arg, metavar="BYTES",
                        help="device memory instead of the probe's answer: 24GiB, 80GB or 25769803776")
    parser.add_argument("--headroom", type=_headroom, default=0.6,
                        help="share of device memory the arena and side buffers may use (default 0.6)")
    parser.add_argument("--free", action="store_true", help="probe free device memory instead of total")


def _add_training_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--training", action="store_true",
                        help="size the training step instead: the graph's scalar loss differentiated with respect to "
                             "its params (rlxir grad), planned with the weights at the forward plan's offsets")


def register(subparsers) -> None:
    compile_parser = subparsers.add_parser(
        "compile", help="compile a graph for a target and report its memory plan",
        description="Run TARGET's pass pipeline on the graph, plan its memory with TARGET's planner, and report: "
                    "node counts per pass, the arena (exact bytes and units), the lower bound and the planner's "
                    "efficiency, side buffers, the ABI ceiling, the budget on this device, and whether it fits. A "
                    "target refuses an arena past its ceiling (exit 1).",
        epilog="example: rlxir compile examples/gpt2_small.rlx --target rocm --batch 8")
    add_input_options(compile_parser)
    compile_parser.add_argument("--target", "-t", required=True, metavar="T", help="cpu, cuda, rocm, metal, gpu, vulkan")
    compile_parser.add_argument("--emit", choices=("mir", "lir", "plan", "none"), default="none",
                                help="also print the graph after the pipeline (lir), before it (mir), or the full plan")
    compile_parser.add_argument("--print-pipeline", action="store_true", help="print the target's pipeline spec")
    compile_parser.add_argument("--json", action="store_true", help="print the report as JSON")
    _add_planner_options(compile_parser)
    _add_pipeline_options(compile_parser)
    _add_budget_options(compile_parser)
    _add_training_option(compile_parser)
    compile_parser.set_defaults(run=run_compile)

    fit = subparsers.add_parser(
        "fit", help="find the largest batch whose compiled arena fits the device",
        description="Compile the graph at several batches with TARGET's own pipeline and planner (never an "
                    "estimate) and report the largest batch in 1..--max-batch whose arena fits the budget: device "
                    "memory (probed, or --vram) x --headroom, less side buffers, capped at the ABI ceiling. The "
                    "search halves from --max-batch, then bisects: about 2 log2(max-batch) plans.",
        epilog="example: rlxir fit examples/gpt2_small.rlx --target cuda --max-batch 64 --vram 24GiB -D S=1024")
    fit.add_argument("file", metavar="FILE", help="an .rlx file")
    fit.add_argument("--graph", metavar="NAME", help="the graph to use (default: the file's first graph)")
    fit.add_argument("-D", dest="define", metavar="SYM=VALUE", action="append", default=[],
                     type=symbol_binding,
                     help="bind another symbol (repeatable)")
    fit.add_argument("--target", "-t", required=True, metavar="T", help="cpu, cuda, rocm, metal, gpu, vulkan")
    fit.add_argument("--batch-dim", metavar="SYM", default="B", help="the batch symbol (default: B)")
    fit.add_argument("--max-batch", type=positive_int, required=True, metavar="N", help="the largest batch to consider")
    fit.add_argument("--json", action="store_true", help="print the result as JSON")
    _add_planner_options(fit)
    _add_pipeline_options(fit)
    _add_budget_options(fit)
    _add_training_option(fit)
    fit.set_defaults(run=run_fit)

    compare = subparsers.add_parser(
        "compare", help="compile a graph for every target and compare their arenas",
        description="Compile the graph for each target and print one row per target: nodes after its pipeline, "
                    "arena, lower bound, the ratio to the smallest arena, the ABI ceiling, and whether it fits "
                    "the budget (probe or --vram). With --execute, each target's compiled graph also runs inside "
                    "its planned arena and is compared with the interpreter (a 'run' column).")
    add_input_options(compare)
    compare.add_argument("--targets", metavar="LIST", help="comma-separated targets (default: all)")
    compare.add_argument("--execute", action="store_true",
                         help="run each target's plan in its arena (rlxir run --target) and say whether it matched")
    compare.add_argument("--json", action="store_true", help="print the rows as JSON")
    compare.add_argument("--jobs", type=positive_int, metavar="N",
                         help="targets compiled at once, in worker processes (default: the cores available; "
                              "1: one after another); the output is the same either way. --execute runs serially")
    _add_budget_options(compare)
    _add_pipeline_options(compare)
    _add_training_option(compare)
    compare.set_defaults(run=run_compare)

    targets = subparsers.add_parser("targets", help="list the targets and their pipelines",
                                    description="Each target's pipeline, planner, alignment, sizing, ceiling and probe.")
    targets.add_argument("--json", action="store_true", help="print as JSON")
    targets.set_defaults(run=run_targets)

    plan = subparsers.add_parser(
        "plan", help="plan a graph's memory and show the plan",
        description="Compile the graph for --target (default cpu) up to its memory plan and show the plan: a "
                    "table of the largest buffers, all of it with --json, or a picture with --plot (needs "
                    "matplotlib: pip install 'rlxir[plot]'). --planner/--alignment/--sizing override the target's.")
    add_input_options(plan)
    plan.add_argument("--target", "-t", default="cpu", metavar="T", help="plan exactly as this target does (default cpu)")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON (every buffer)")
    plan.add_argument("--plot", metavar="PNG", help="draw the plan to PNG: time on x, offset on y")
    plan.add_argument("--limit", type=int, default=40, help="buffers shown in the table (default 40)")
    _add_planner_options(plan)
    _add_pipeline_options(plan)
    plan.set_defaults(run=run_plan)

    plan_csv = subparsers.add_parser(
        "plan-csv", help="plan a buffer list in MiniMalloc CSV format",
        description="Read buffers as CSV (id,lower,upper,size with half-open [lower, upper)), plan them, validate "
                    "the placement, and print arena, lower bound and their ratio.")
    plan_csv.add_argument("file", metavar="FILE.csv")
    plan_csv.add_argument("--planner", choices=sorted(PLANNERS), default="liveness", help="default: liveness")
    plan_csv.add_argument("--alignment", type=positive_int, default=1, metavar="N", help="default: 1")
    plan_csv.add_argument("--time-budget", type=time_budget, metavar="S",
                          help="with --planner best: seconds for the whole command, from process start to the "
                               "report (default 4.5)")
    plan_csv.add_argument("--offsets", metavar="OUT.csv", help="write the solution with an offset column")
    plan_csv.add_argument("--json", action="store_true", help="print the result as JSON")
    plan_csv.set_defaults(run=run_plan_csv)


# --- helpers ----------------------------------------------------------------------------
def _options(args: argparse.Namespace, target: Target | None = None) -> CompileOptions:
    """The planner overrides the options give; with `target`, passes named on a terminal."""
    instruments = () if target is None else (_pass_progress(target),)
    return CompileOptions(planner=getattr(args, "planner", None), alignment=getattr(args, "alignment", None),
                          sizing=getattr(args, "sizing", None), time_budget=getattr(args, "time_budget", None),
                          instruments=instruments)


def _pass_progress(target: Target) -> progress.PassProgress:
    return progress.PassProgress(f"compiling for {target.name}", len(parse_pipeline(target.pipeline).entries))


def _graph(args: argparse.Namespace):
    _progress(f"parsing {args.file} ...")
    module = load_module(args)
    _progress_done()
    return module[args.graph] if args.graph else module.main


_progress, _progress_done = progress.show, progress.clear
_IMPORTED = time.perf_counter()


def _human(count: int | None) -> str:
    return "-" if count is None else f"{count} B ({format_bytes(count)})"


# --- compile ----------------------------------------------------------------------------
def run_compile(args: argparse.Namespace) -> int:
    if args.training:
        from rlxir.cli.training_commands import run_training_compile

        return run_training_compile(args)
    target = cli_target(args.target, args)
    graph = _graph(args)
    options = _options(args, target)
    _progress(f"compiling for {target.name} ...")
    started = time.perf_counter()
    exec_graph = prepare_exec_graph(graph, target, bindings_from(args), options)
    _progress(f"planning {len(exec_graph.graph)} nodes with {options.planner or target.planner} ...")
    plan = plan_exec_graph(exec_graph, target, options)
    seconds = time.perf_counter() - started
    _progress_done()
    refused = exceeds_ceiling(target, plan.arena_bytes)
    budget = arena_budget(target, args.headroom, args.vram, "free" if args.free else "total")
    fits, reason = fit_verdict(target, plan.arena_bytes, budget.bytes)
    report = {
        "target": target.name, "pipeline": target.pipeline, "bindings": dict(exec_graph.bindings),
        "stages": [{"pass": stage.spec, "nodes_before": stage.nodes_before, "nodes_after": stage.nodes_after,
                    "seconds": round(stage.seconds, 6)} for stage in exec_graph.stages],
        "nodes": len(exec_graph.graph), "arena_bytes": plan.arena_bytes, "lower_bound_bytes": plan.lower_bound_bytes,
        "unshared_bytes": plan.unshared_bytes, "efficiency": round(plan.efficiency, 6), "planner": plan.planner,
        "alignment": plan.alignment, "sizing": plan.sizing, "side_buffers": dict(plan.side_buffers),
        "ceiling_bytes": target.arena_ceiling, "budget_bytes": budget.bytes, "budget": budget.explain(),
        "refused": refused, "fits": fits, "fits_reason": reason, "seconds": round(seconds, 6),
    }
    if args.json:
        if args.emit == "plan":
            report["plan"] = plan.to_json()
        print(json.dumps(report, indent=2))
    else:
        _print_compile(args, graph, exec_graph, plan, target, report)
    return report_refusal(target, "this graph", plan.arena_bytes, report)


def report_refusal(target: Target, what: str, arena_bytes: int, report: dict) -> int:
    """Exit status of a compile report: 1 with one diagnostic when the arena is refused or over
    a known budget (the report is already printed), else 0."""
    if report["fits"] is not False:
        return 0
    verb = "refuses" if report["refused"] else "cannot fit"
    error = RlxError(f"{target.name} {verb} {what}: its arena needs {_human(arena_bytes)}, {report['fits_reason']}",
                     expected="a smaller batch or sequence (rlxir fit finds the largest that fits)")
    print(error.render(), file=sys.stderr)
    return 1


def _print_compile(args, graph, exec_graph, plan, target, report) -> None:
    if args.emit == "mir":
        print(print_graph(graph))
    if args.print_pipeline:
        print(f"pipeline  {target.pipeline}\n")
    bound = ", ".join(f"{symbol}={value}" for symbol, value in exec_graph.bindings.items()) or "none"
    print(f"target {target.name} ({target.description}); symbols {bound}")
    width = max(len(stage.spec) for stage in exec_graph.stages) if exec_graph.stages else 10
    print(f"\n  {'pass':<{width}}  {'nodes in':>9}  {'nodes out':>9}")
    for stage in exec_graph.stages:
        print(f"  {stage.spec:<{width}}  {stage.nodes_before:>9}  {stage.nodes_after:>9}")
    print()
    print(f"arena        {_human(plan.arena_bytes)}")
    print(f"lower bound  {_human(plan.lower_bound_bytes)}  (planner efficiency {plan.efficiency:.1%}, "
          f"{plan.planner}, alignment {plan.alignment}, sizing {plan.sizing})")
    for name, size in plan.side_buffers.items():
        print(f"side buffer  {name} {_human(size)} (outside the arena)")
    print(f"ceiling      {_human(target.arena_ceiling) if target.arena_ceiling is not None else 'none (64-bit)'}")
    print(f"budget       {report['budget']}")
    print(f"fits         {verdict_text(report['fits'], report['fits_reason'])}")
    if args.emit == "lir":
        print()
        print(print_graph(exec_graph.graph))
    if args.emit == "plan":
        print()
        print(plan.table(limit=None))


# --- fit --------------------------------------------------------------------------------
def run_fit(args: argparse.Namespace) -> int:
    target = cli_target(args.target, args)
    graph = _graph(args)
    if args.batch_dim not in graph.symbols:
        raise RlxError(f"graph {graph.name} has no batch symbol {args.batch_dim}",
                       graph.loc, expected="--batch-dim naming one of: " + (", ".join(graph.symbols) or "none"))
    others = bindings_from(args)
    if args.batch_dim in others:
        raise RlxError(f"-D {args.batch_dim}={others[args.batch_dim]}: fit chooses the batch symbol "
                       f"{args.batch_dim} itself",
                       expected=f"--max-batch N to bound the search (or --batch-dim naming another symbol)")
    budget = arena_budget(target, args.headroom, args.vram, "free" if args.free else "total")

    def bind(batch: int):
        return graph.bind({args.batch_dim: batch})

    build = bind
    if args.training:
        from rlxir.cli.training_commands import training_arena_builder

        build = training_arena_builder(graph, target, others, args.batch_dim, _options(args))

    def show(trial) -> None:
        _progress(f"batch {trial.batch}: arena {format_bytes(trial.arena_bytes)} "
                  f"{'fits' if trial.fits else 'does not fit'}")

    result = fit_batch(target, args.max_batch, args.headroom, build, options=_options(args), budget=budget,
                       bindings=others, on_trial=show)
    _progress_done()
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
        return 1 if result.fits is False else 0
    print(f"target {target.name}: {budget.explain()}")
    if args.training:
        print("training step: the arena of the backward graph, weights at the forward plan's offsets")
    if result.fits == "unknown":
        print(f"fits unknown: {result.reason}")
        return 0
    print(f"\n  {'batch':>6}  {'arena':>28}  fits")
    for trial in sorted(result.tried, key=lambda trial: trial.batch):
        print(f"  {trial.batch:>6}  {_human(trial.arena_bytes):>28}  {'yes' if trial.fits else 'no'}")
    print()
    if result.batch is None:
        print(f"does not fit: {result.reason}")
        return 1
    arena = _human(result.arena_bytes) if result.arena_bytes is not None else "not planned"
    plans = f"{len(result.tried)} plan{'' if len(result.tried) == 1 else 's'}"
    print(f"largest batch that fits: {result.batch} (arena {arena}; {result.reason}; {plans})")
    return 0


# --- compare ----------------------------------------------------------------------------
def run_compare(args: argparse.Namespace) -> int:
    if args.training:
        from rlxir.cli.training_commands import run_training_compare

        return run_training_compare(args)
    graph = _graph(args)
    bindings = bindings_from(args)
    reference = SharedReference(graph, bindings)
    return compare_targets(args, lambda target: _compare_row(graph, target, bindings, args, reference),
                           "compiling for", (("arena", "arena_bytes"), ("lower bound", "lower_bound_bytes")))


class SharedReference:
    """The interpreter's run of a graph, made on first use and shared by every target."""

    def __init__(self, graph, bindings: dict, training: bool = False):
        self.graph, self.bindings, self.training = graph, bindings, training
        self._run = None

    def get(self):
        if self._run is None:
            from rlxir.executor import reference_run

            _progress("running the reference interpreter ...")
            bound = self.graph.bind(self.bindings) if self.bindings else self.graph
            self._run = reference_run(bound, training=self.training)
        return self._run


def compare_targets(args: argparse.Namespace, make_row, doing: str, byte_columns) -> int:
    """One row per target (`make_row(target)`), ranked against the smallest arena, printed
    as JSON or as a table whose byte columns are `byte_columns` ((title, key), ...)."""
    names = args.targets.split(",") if args.targets else sorted(available_targets())
    targets = [cli_target(name.strip(), args) for name in names]
    jobs = 1 if getattr(args, "execute", False) else (getattr(args, "jobs", None) or available_cores())
    if jobs > 1 and len(targets) > 1:
        _progress(f"{doing} {len(targets)} targets, {min(jobs, len(targets))} at a time ...")
        rows = map_in_order(make_row, targets, jobs)
    else:
        rows = []
        for target in targets:
            _progress(f"{doing} {target.name} ...")
            rows.append(make_row(target))
    _progress_done()
    arenas = [row["arena_bytes"] for row in rows if row["arena_bytes"] is not None]
    best = min(arenas) if arenas else None
    for row in rows:
        row["ratio_to_best"] = round(row["arena_bytes"] / best, 4) if best and row["arena_bytes"] is not None else None
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    titles = "".join(f" {title:>24}" for title, _ in byte_columns)
    executed = any("run" in row for row in rows)
    header = f"{'target':<8} {'planner':<9} {'nodes':>7}{titles} {'x best':>7} {'ceiling':>12} {'fits':<20}"
    header = (header + " run") if executed else header.rstrip()
    print(header)
    print("-" * len(header))
    for row in rows:
        ceiling = format_bytes(row["ceiling_bytes"]) if row["ceiling_bytes"] is not None else "none"
        ratio = f"{row['ratio_to_best']:.2f}" if row["ratio_to_best"] is not None else "-"
        values = "".join(f" {_human(row[key]):>24}" for _, key in byte_columns)
        fits = _short_verdict(row["fits"], row["fits_reason"])
        line = f"{row['target']:<8} {row['planner']:<9} {row['nodes']:>7}{values} {ratio:>7} {ceiling:>12} {fits:<20}"
        print(f"{line} {row['run']}" if executed else line.rstrip())
    failed = [row["target"] for row in rows if row.get("run_matched") is False]
    if failed:
        print(RlxError(f"the arena run did not match the reference on {', '.join(failed)}",
                       expected="every target's plan to run and match (this is a defect in its pipeline or "
                                "planner)").render(), file=sys.stderr)
        return 1
    return 0


def _short_verdict(fits: bool | str, reason: str) -> str:
    """A compare cell: ``yes``, ``no (past ceiling)``, ``no (over budget)`` or ``unknown (no budget)``."""
    if fits is True:
        return "yes"
    if fits == "unknown":
        return "unknown (no budget)"
    return "no (past ceiling)" if reason.startswith("past the") else "no (over budget)"


def execution_column(row: dict, run_check) -> dict:
    """Add the --execute columns to a compare row: `run_check()` gives the ExecutionCheck."""
    if row["fits"] is False and row["fits_reason"].startswith("past the"):
        row["run"], row["run_matched"] = "not run (past the ceiling)", None
        return row
    check = run_check()
    row["run"], row["run_matched"] = check.verdict, check.matched
    row["run_outside_bytes"] = check.run.outside_peak_bytes
    return row


def _compare_row(graph, target, bindings, args, reference: SharedReference) -> dict:
    exec_graph = prepare_exec_graph(graph, target, bindings)
    plan = plan_exec_graph(exec_graph, target)
    row = _compare_numbers(exec_graph, plan, target, args)
    if not getattr(args, "execute", False):
        return row

    def run_check():
        from rlxir.executor import check_execution

        _progress(f"running {target.name}'s plan in its arena ...")
        result = CompileResult(target, exec_graph.graph, plan, exec_graph.stages, dict(exec_graph.bindings))
        return check_execution(reference.get().graph, result, reference=reference.get())

    return execution_column(row, run_check)


def _compare_numbers(exec_graph, plan, target, args) -> dict:
    budget = arena_budget(target, args.headroom, args.vram, "free" if args.free else "total")
    fits, reason = fit_verdict(target, plan.arena_bytes, budget.bytes)
    return {"target": target.name, "planner": plan.planner, "nodes": len(exec_graph.graph),
            "arena_bytes": plan.arena_bytes, "lower_bound_bytes": plan.lower_bound_bytes,
            "ceiling_bytes": target.arena_ceiling, "budget_bytes": budget.bytes, "fits": fits, "fits_reason": reason}


# --- targets, plan, plan-csv ------------------------------------------------------------
def run_targets(args: argparse.Namespace) -> int:
    rows = [{"target": target.name, "pipeline": target.pipeline, "planner": target.planner,
             "alignment": target.alignment, "sizing": target.sizing, "ceiling_bytes": target.arena_ceiling,
             "probe": target.probe, "side_buffers": dict(target.side_buffers), "description": target.description}
            for target in sorted(available_targets().values(), key=lambda target: target.name)]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        ceiling = row["ceiling_bytes"] if row["ceiling_bytes"] is not None else "none"
        print(f"{row['target']}: {row['description']}")
        print(f"  planner {row['planner']}, alignment {row['alignment']}, sizing {row['sizing']}, "
              f"ceiling {ceiling}, probe {row['probe'] or 'none'}")
        print(f"  pipeline {row['pipeline']}\n")
    return 0


def run_plan(args: argparse.Namespace) -> int:
    if args.plot:
        checked_plot_path(args.plot)
    target = cli_target(args.target, args)
    graph = _graph(args)
    options = _options(args)
    plan = plan_exec_graph(prepare_exec_graph(graph, target, bindings_from(args), options), target, options)
    if args.plot:
        from rlxir.plan_plot import draw_plan

        with atomic_output(args.plot, binary=True) as handle:
            draw_plan(plan, handle, f"{graph.name} on {target.name}: {plan.planner}, efficiency {plan.efficiency:.1%}",
                      image_format=args.plot.rpartition(".")[2].lower())
    if args.json:
        print(json.dumps(plan.to_json(), indent=2))
    else:
        print(plan.table(limit=args.limit))
        if args.plot:
            print(f"\nplot written to {args.plot}")
    return 0


def checked_plot_path(path: str) -> None:
    """--plot PATH: a writable file whose extension names an image format matplotlib writes."""
    from rlxir.plan_plot import plot_formats

    checked_output_file(path, "--plot")
    suffix = path.rpartition(".")[2].lower() if "." in path.rpartition("/")[2] else ""
    formats = plot_formats()
    if suffix not in formats:
        raise RlxError(f"--plot {path}: {'.' + suffix if suffix else 'no extension'} is not an image format",
                       expected="a file ending in one of: " + ", ".join("." + name for name in sorted(formats)))


def _planning_budget(planner, budget: float | None, reading: float) -> float | None:
    """What is left for `best` of the command's `budget` (its default when None), which
    counts from process start: minus the time already spent, and minus 1.5 x `reading`
    for what follows the plan (validating it costs about as much as reading the file did,
    freeing the buffers at exit about half as much)."""
    if planner.name != "best":
        return budget
    total = planner.default_budget if budget is None else budget
    return max(total - _process_seconds() - 1.5 * reading, 0.0)


def _process_seconds() -> float:
    """Seconds since this process started (Linux: from /proc; elsewhere since the CLI's
    import, which misses the interpreter's own start-up)."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            started_ticks = int(stat.read().rpartition(")")[2].split()[19])
            return max(float(uptime.read().split()[0]) - started_ticks / os.sysconf("SC_CLK_TCK"), 0.0)
    except (OSError, ValueError, IndexError):
        return time.perf_counter() - _IMPORTED


def run_plan_csv(args: argparse.Namespace) -> int:
    from rlxir.planning import get_planner, read_instance, validate_plan, write_solution

    from rlxir.planning import InstanceError, PlanError

    if args.offsets:
        checked_output_file(args.offsets, "--offsets", [args.file])
    try:
        _progress(f"reading {args.file} ...")
        read_started = time.perf_counter()
        buffers = read_instance(args.file)
        reading = time.perf_counter() - read_started
        _progress(f"planning {len(buffers)} buffers with {args.planner} ...")
        planner = get_planner(args.planner)
        started = time.perf_counter()
        result = planner.plan(buffers, args.alignment, _planning_budget(planner, args.time_budget, reading),
                              progress.Throttled())
        seconds = time.perf_counter() - started
        _progress(f"validating the placement of {len(buffers)} buffers ...")
        validate_plan(buffers, result.offsets, args.alignment, result.arena_bytes)
        _progress_done()
    except InstanceError as error:
        # The message already starts with file:line:; keep only the explanation after it.
        explanation = str(error).removeprefix(f"{error.path}:{error.line}: ")
        raise RlxError(explanation, Location(error.path, error.line, 1)) from None
    except PlanError as error:  # an instance that breaks a planning rule (duplicate ids ...)
        raise RlxError(f"{args.file}: {error}") from None
    except OSError as error:
        raise RlxError(f"cannot read {args.file}: {error.strerror or error}") from None
    if args.offsets:
        with atomic_output(args.offsets) as handle:
            write_solution(handle, buffers, result.offsets)
    ratio = result.arena_bytes / result.lower_bound_bytes if result.lower_bound_bytes else 1.0
    report = {"file": args.file, "planner": args.planner, "alignment": args.alignment, "buffers": len(buffers),
              "arena_bytes": result.arena_bytes, "lower_bound_bytes": result.lower_bound_bytes,
              "ratio": round(ratio, 6), "seconds": round(seconds, 6), "valid": True}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{args.file}: {len(buffers)} buffers, planner {args.planner}, alignment {args.alignment}")
    print(f"arena        {_human(result.arena_bytes)}")
    print(f"lower bound  {_human(result.lower_bound_bytes)}")
    print(f"ratio        {ratio:.4f}  (validated; {seconds:.3f} s)")
    if args.offsets:
        print(f"offsets written to {args.offsets}")
    return 0

