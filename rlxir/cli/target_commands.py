"""`rlxir compile`, `fit`, `compare`, `targets`, `plan` and `plan-csv`.

compile, fit and compare share one code path per target (rlxir.compiler.compile): what `fit`
reports for a batch is exactly what `compile` plans at that batch.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import attrs

from rlxir.cli import progress
from rlxir.cli.comparison import (PLAN_PAGE_KEY, SharedReference, compare_targets, row_fields, with_execution,
                                  write_plan_page)
from rlxir.cli.host_memory import check_arena_run_memory
from rlxir.cli.options import (BATCH_SYMBOL, add_command, add_input_options, bindings_from, positive_int, read_graph,
                               time_budget)
from rlxir.cli.output_files import atomic_output, checked_output_file
from rlxir.cli.reports import (human_bytes, print_json_report, print_lower_bound, print_report_head, print_report_tail,
                               print_side_buffers, print_stage_table, print_verdict, stages_json, verdict_exit)
from rlxir.cli.target_options import (add_budget_options, add_compile_options, add_pipeline_options, add_planner_options,
                                      add_training_option, budget_from, cli_target, compile_options,
                                      optimizer_from_args, target_names)
from rlxir.cli.training_commands import (print_breakdown, run_training_compare, run_training_compile,
                                         training_arena_builder, training_breakdown_at)
from rlxir.compiler.compile import FitReport, plan_compile
from rlxir.targets.devices import format_bytes
from rlxir.errors import Location, RlxError
from rlxir.compiler.fit import fit_batch
from rlxir.cli.plan_page import plan_page_entry
from rlxir.planning import DEFAULT_TIME_BUDGET, PLANNERS
from rlxir.targets.target import available_targets
from rlxir.compiler.workers import available_cores

DEFAULT_MAX_BATCH = 1024  # fit's search bound when --max-batch is not given: about 20 plans

# Where `_process_seconds` counts from when /proc is not there.
_IMPORTED = time.perf_counter()


def register(subparsers) -> None:
    compile_parser = add_command(subparsers, "compile", run_compile,
                                 "compile a graph for a target and report its memory plan",
                                 epilog="example: rlxir compile examples/gpt2_small.rlx --target rocm --batch 8")
    add_input_options(compile_parser)
    compile_parser.add_argument("--target", "-t", required=True, metavar="T", help=target_names())
    compile_parser.add_argument("--emit", choices=("mir", "lir", "plan", "none"), default="none",
                                help="also print the graph after the pipeline (lir), before it (mir), or the full plan")
    compile_parser.add_argument("--print-pipeline", action="store_true", help="print the target's pipeline spec")
    compile_parser.add_argument("--json", action="store_true", help="print the report as JSON")
    add_compile_options(compile_parser)

    fit = add_command(subparsers, "fit", run_fit, "find the largest batch whose compiled arena fits the device",
                      epilog="example: rlxir fit examples/gpt2_small.rlx --target cuda --max-batch 64 --vram 24GiB "
                             "-D S=1024")
    add_input_options(fit, batch=False)  # the search binds the batch symbol itself
    fit.add_argument("--target", "-t", required=True, metavar="T", help=target_names())
    fit.add_argument("--batch-dim", metavar="SYM", default=BATCH_SYMBOL,
                     help=f"the batch symbol (default: {BATCH_SYMBOL})")
    fit.add_argument("--max-batch", type=positive_int, default=DEFAULT_MAX_BATCH, metavar="N",
                     help=f"the largest batch to consider (default {DEFAULT_MAX_BATCH})")
    fit.add_argument("--json", action="store_true", help="print the result as JSON")
    fit.add_argument("--jobs", type=positive_int, metavar="N",
                     help="batches planned at once per search round, in worker processes (default: the cores "
                          "available; 1: one after another; never more processes than cores); the answer is the same "
                          "either way")
    add_compile_options(fit)

    compare = add_command(subparsers, "compare", run_compare,
                          "compile a graph for every target and compare their arenas")
    add_input_options(compare)
    compare.add_argument("--targets", metavar="LIST", help="comma-separated targets (default: all)")
    compare.add_argument("--execute", action="store_true",
                         help="run each target's plan in its arena (rlxir run --target) and say whether it matched")
    compare.add_argument("--json", action="store_true", help="print the rows as JSON")
    compare.add_argument("--html", metavar="PAGE",
                         help="write every target's plan to one self-contained HTML page, with a target selector")
    compare.add_argument("--jobs", type=positive_int, metavar="N",
                         help="targets compiled at once, in worker processes (default: the cores available; "
                              "1: one after another); the output is the same either way. --execute runs serially")
    add_budget_options(compare)
    add_pipeline_options(compare)
    add_training_option(compare)

    targets = add_command(subparsers, "targets", run_targets, "list the targets and their pipelines")
    targets.add_argument("--json", action="store_true", help="print as JSON")

    plan = add_command(subparsers, "plan", run_plan, "plan a graph's memory and show the plan")
    add_input_options(plan)
    plan.add_argument("--target", "-t", default="cpu", metavar="T", help="plan exactly as this target does (default cpu)")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON (every buffer)")
    plan.add_argument("--plot", metavar="PNG", help="draw the plan to PNG: time on x, offset on y")
    plan.add_argument("--html", metavar="PAGE",
                      help="write the plan as one self-contained interactive HTML page (hover, zoom, pan)")
    plan.add_argument("--limit", type=int, default=40, help="buffers shown in the table (default 40)")
    add_planner_options(plan)
    add_pipeline_options(plan)

    plan_csv = add_command(subparsers, "plan-csv", run_plan_csv, "plan a buffer list in MiniMalloc CSV format")
    plan_csv.add_argument("file", metavar="FILE.csv")
    plan_csv.add_argument("--planner", choices=sorted(PLANNERS), default="liveness", help="default: liveness")
    plan_csv.add_argument("--alignment", type=positive_int, default=1, metavar="N", help="default: 1")
    plan_csv.add_argument("--time-budget", type=time_budget, metavar="S",
                          help="with --planner best: seconds for the whole command, from process start to the "
                               f"report (default {DEFAULT_TIME_BUDGET:g})")
    plan_csv.add_argument("--offsets", metavar="OUT.csv", help="write the solution with an offset column")
    plan_csv.add_argument("--json", action="store_true", help="print the result as JSON")


# --- compile ----------------------------------------------------------------------------
def run_compile(args: argparse.Namespace) -> int:
    """Run TARGET's pass pipeline on the graph, plan its memory with TARGET's planner, and report:
    node counts per pass, the arena (exact bytes and units), the lower bound and the planner's
    efficiency, side buffers, the ABI ceiling, the budget on this device, and whether it fits. A
    target refuses an arena past its ceiling (exit 1)."""
    optimizer_from_args(args)  # optimizer options without --training are a usage error
    if args.training:
        return run_training_compile(args)
    target = cli_target(args.target, args)
    graph = read_graph(args)
    progress.show(f"compiling for {target.name} ...")
    started = time.perf_counter()
    # The graph was parsed for this compile alone: it is bound and transformed itself, not a
    # copy, unless --emit mir prints it as written afterwards.
    options = attrs.evolve(compile_options(args, shown_for=target), reuse_graph=args.emit != "mir")
    result = plan_compile(graph, target, bindings_from(args), options)
    seconds = time.perf_counter() - started
    progress.clear()
    plan = result.plan
    verdict = FitReport.judge(target, plan.arena_bytes, budget_from(args, target))
    report = {
        "target": target.name, "pipeline": target.pipeline, "bindings": dict(result.bindings),
        "stages": stages_json(result.stages), "nodes": len(result.graph), "arena_bytes": plan.arena_bytes,
        "lower_bound_bytes": plan.lower_bound_bytes, "unshared_bytes": plan.unshared_bytes,
        "efficiency": round(plan.efficiency, 6), "planner": plan.planner, "alignment": plan.alignment,
        "sizing": plan.sizing, "side_buffers": dict(plan.side_buffers), **verdict.to_json(),
        "seconds": round(seconds, 6),
    }
    if args.json:
        print_json_report(args, report, plan)
    else:
        print_report_head(args, target, graph, result.bindings)
        print_stage_table(result.stages, "pass")
        print(f"arena        {human_bytes(plan.arena_bytes)}")
        print_lower_bound(plan, 13)
        print_side_buffers(plan.side_buffers, 13)
        print_verdict(verdict, 13)
        print_report_tail(args, result.graph, plan)
    return verdict_exit(verdict, "this graph")


# --- fit --------------------------------------------------------------------------------
def run_fit(args: argparse.Namespace) -> int:
    """Compile the graph at several batches with TARGET's own pipeline and planner (never an
    estimate) and report the largest batch in 1..--max-batch whose arena fits the budget: device
    memory (probed, or --vram) x --headroom, less side buffers, capped at the ABI ceiling. The
    search halves from --max-batch, then bisects: about 2 log2(max-batch) rounds of up to --jobs
    plans each."""
    target = cli_target(args.target, args)
    graph = read_graph(args)
    if args.batch_dim not in graph.symbols:
        raise RlxError(f"graph {graph.name} has no batch symbol {args.batch_dim}",
                       graph.loc, expected="--batch-dim naming one of: " + (", ".join(graph.symbols) or "none"))
    others = bindings_from(args)
    if args.batch_dim in others:
        raise RlxError(f"-D {args.batch_dim}={others[args.batch_dim]}: fit chooses the batch symbol "
                       f"{args.batch_dim} itself",
                       expected="--max-batch N to bound the search (or --batch-dim naming another symbol)")
    budget = budget_from(args, target)
    options = compile_options(args)
    optimizer = optimizer_from_args(args)

    def bind(batch: int):
        return graph.bind({args.batch_dim: batch})

    build = (training_arena_builder(graph, target, others, args.batch_dim, options, optimizer) if args.training
             else bind)

    def show(trial) -> None:
        progress.show(f"batch {trial.batch}: arena {format_bytes(trial.arena_bytes)} "
                      f"{'fits' if trial.fits else 'does not fit'}")

    # Each batch's graph is bound afresh (`bind`) and compiled once: it is handed over to the
    # compile instead of copied again (the training builder compiles graphs of its own).
    fit_options = options if args.training else attrs.evolve(options, reuse_graph=True)
    result = fit_batch(target, args.max_batch, args.headroom, build, options=fit_options, budget=budget,
                       bindings=others, on_trial=show, jobs=args.jobs or available_cores())
    progress.clear()
    step = None
    if args.training and result.batch is not None:
        progress.show(f"batch {result.batch}: the training arena by part ...")
        step = training_breakdown_at(graph, target, {**others, args.batch_dim: result.batch}, options, optimizer)
        progress.clear()
    if args.json:
        print(json.dumps({**result.to_json(), **(step or {})}, indent=2))
        return 1 if result.fits is False else 0
    print(f"target {target.name}: {budget.explain()}")
    if args.training:
        print("training step: the arena of the backward graph and the optimizer's update ("
              f"{optimizer.describe() if optimizer else 'none'}), weights at the forward plan's offsets")
    if result.fits == "unknown":
        print(f"fits unknown: {result.reason}")
        return 0
    print(f"\n  {'batch':>6}  {'arena':>28}  fits")
    for trial in sorted(result.tried, key=lambda trial: trial.batch):
        print(f"  {trial.batch:>6}  {human_bytes(trial.arena_bytes):>28}  {'yes' if trial.fits else 'no'}")
    print()
    if result.batch is None:
        print(f"does not fit: {result.reason}")
        return 1
    arena = human_bytes(result.arena_bytes) if result.arena_bytes is not None else "not planned"
    plans = f"{len(result.tried)} plan{'' if len(result.tried) == 1 else 's'}"
    if result.jobs > 1:
        plans += f" in {result.rounds} round{'' if result.rounds == 1 else 's'} of up to {result.jobs}"
    print(f"largest batch that fits: {result.batch} (arena {arena}; {result.reason}; {plans})")
    if step:
        print(f"training arena at batch {result.batch}:")
        print_breakdown(step["breakdown"])
    return 0


# --- compare ----------------------------------------------------------------------------
def run_compare(args: argparse.Namespace) -> int:
    """Compile the graph for each target and print one row per target: nodes after its pipeline,
    arena, lower bound, the ratio to the smallest arena, the ABI ceiling, and whether it fits the
    budget (probe or --vram). With --execute, each target's compiled graph also runs inside its
    planned arena and is compared with the interpreter (a 'run' column)."""
    optimizer_from_args(args)  # optimizer options without --training are a usage error
    if args.html:
        checked_output_file(args.html, "--html", [args.file])
    if args.training:
        return run_training_compare(args)
    graph = read_graph(args)
    bindings = bindings_from(args)
    reference = SharedReference(graph, bindings)
    return compare_targets(args, lambda target: _compare_row(graph, target, bindings, args, reference),
                           "compiling for", (("arena", "arena_bytes"), ("lower bound", "lower_bound_bytes")))


def _compare_row(graph, target, bindings, args, reference: SharedReference):
    result = plan_compile(graph, target, bindings)
    verdict = FitReport.judge(target, result.arena_bytes, budget_from(args, target))
    made = row_fields(verdict, planner=result.plan.planner, nodes=len(result.graph), arena_bytes=result.arena_bytes,
                      lower_bound_bytes=result.lower_bound_bytes)
    if getattr(args, "html", None):
        made[0][PLAN_PAGE_KEY] = plan_page_entry(result.plan, result.graph, target.name)
    if not getattr(args, "execute", False):
        return made

    def run_check():
        from rlxir.executor import check_execution

        shared = reference.get()
        check_arena_run_memory(shared.graph, result.graph, {},  # the shared graph is bound
                               result.arena_bytes + sum(result.side_buffers.values()), "cpu", reference_done=True)
        progress.show(f"running the plan in its arena ({result.arena_bytes} B) and comparing ...")
        return check_execution(shared.graph, result, reference=shared)

    return with_execution(made, run_check)


# --- targets, plan, plan-csv ------------------------------------------------------------
def run_targets(args: argparse.Namespace) -> int:
    """Each target's pipeline, planner, alignment, sizing, ceiling and probe."""
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
    """Compile the graph for --target (default cpu) up to its memory plan and show the plan: a table
    of the largest buffers, all of it with --json, or a picture with --plot (needs matplotlib: pip
    install 'rlxir[plot]'). --planner/--alignment/--sizing override the target's."""
    if args.plot:
        checked_plot_path(args.plot)
    if args.html:
        checked_output_file(args.html, "--html", [args.file])
    target = cli_target(args.target, args)
    graph = read_graph(args)
    compiled = plan_compile(graph, target, bindings_from(args), compile_options(args))
    plan = compiled.plan
    if args.html:
        write_plan_page(args.html, [plan_page_entry(plan, compiled.graph, target.name)])
    if args.plot:
        from rlxir.compiler.plan_plot import draw_plan

        with atomic_output(args.plot, binary=True) as handle:
            draw_plan(plan, handle, f"{graph.name} on {target.name}: {plan.planner}, efficiency {plan.efficiency:.1%}",
                      image_format=args.plot.rpartition(".")[2].lower())
    if args.json:
        print(json.dumps(plan.to_json(), indent=2))
    else:
        print(plan.table(limit=args.limit))
        if args.plot:
            print(f"\nplot written to {args.plot}")
        if args.html:
            print(f"\npage written to {args.html}")
    return 0


def checked_plot_path(path: str) -> None:
    """--plot PATH: a writable file whose extension names an image format matplotlib writes."""
    from rlxir.compiler.plan_plot import plot_formats

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
    """Read buffers as CSV (id,lower,upper,size with half-open [lower, upper)), plan them, validate
    the placement, and print arena, lower bound and their ratio."""
    from rlxir.planning import InstanceError, PlanError, get_planner, read_instance, validate_plan, write_solution

    if args.offsets:
        checked_output_file(args.offsets, "--offsets", [args.file])
    try:
        progress.show(f"reading {args.file} ...")
        read_started = time.perf_counter()
        buffers = read_instance(args.file)
        reading = time.perf_counter() - read_started
        progress.show(f"planning {len(buffers)} buffers with {args.planner} ...")
        planner = get_planner(args.planner)
        started = time.perf_counter()
        result = planner.plan(buffers, args.alignment, _planning_budget(planner, args.time_budget, reading),
                              progress.Throttled())
        seconds = time.perf_counter() - started
        progress.show(f"validating the placement of {len(buffers)} buffers ...")
        validate_plan(buffers, result.offsets, args.alignment, result.arena_bytes)
        progress.clear()
    except InstanceError as error:
        # The message already starts with file:line:; keep only the explanation after it.
        explanation = str(error).removeprefix(f"{error.path}:{error.line}: ")
        raise RlxError(explanation, Location(error.path, error.line, error.column)) from None
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
    print(f"arena        {human_bytes(result.arena_bytes)}")
    print(f"lower bound  {human_bytes(result.lower_bound_bytes)}")
    print(f"ratio        {ratio:.4f}  (validated; {seconds:.3f} s)")
    if args.offsets:
        print(f"offsets written to {args.offsets}")
    return 0

