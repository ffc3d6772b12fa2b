"""`rlxir grad`, and the training step behind `compile`, `fit` and `compare --training`.

`grad` writes the backward graph of a loss (rlxir.grad) as an .rlx file. With
`--training`, compile/fit/compare size the training step — the backward graph and the
optimizer's update (`--optimizer`, AdamW by default) planned with its weights at the forward
plan's offsets (rlxir.autodiff.training) — through one code path,
`rlxir.autodiff.training.plan_training`, so what `fit` reports for a batch is what
`compile --training` plans at that batch.
"""

from __future__ import annotations

import argparse
import time

from rlxir.autodiff.backward import grad
from rlxir.cli import progress, reports
from rlxir.cli.comparison import PLAN_PAGE_KEY, SharedReference, compare_targets, row_fields, with_execution
from rlxir.cli.options import add_command, add_input_options, bindings_from, load_graph, read_graph
from rlxir.cli.output_files import add_output_option, checked_output_file, print_or_write
from rlxir.cli.target_options import budget_from, cli_target, compile_options, optimizer_from_args
from rlxir.compiler.compile import FitReport
from rlxir.cli.plan_page import plan_page_entry
from rlxir.ir.printer import print_graph
from rlxir.autodiff.training import TrainingResult, plan_training, plan_training_arena_bytes, training_graph


def register(subparsers) -> None:
    parser = add_command(subparsers, "grad", run_grad, "write the backward graph of a loss",
                         epilog="example: rlxir grad examples/mamba_lm.rlx -o mamba_lm.grad.rlx")
    add_input_options(parser)
    add_output_option(parser, "the backward graph")
    parser.add_argument("--wrt", metavar="NAMES",
                        help="comma-separated inputs or params to differentiate with respect to (default: every "
                             "floating-point param)")


def run_grad(args: argparse.Namespace) -> int:
    """Differentiate the graph's one output, a scalar loss, with respect to its params (or --wrt)
    and write the backward graph: the forward computation followed by the backward one, whose
    outputs are the loss and one gradient per value, named grad.<value>. Fused ops without a
    gradient rule of their own are unfused first; an op with no gradient on the way from a value to
    the loss is an error at its line. -D/--batch specialise the graph first."""
    if args.output:
        checked_output_file(args.output, "-o", [args.file], args.in_place)
    graph = load_graph(args)
    wrt = [name.strip() for name in args.wrt.split(",") if name.strip()] if args.wrt else None
    backward = grad(graph, wrt)
    if not print_or_write(args.output, print_graph(backward)):
        return 0
    print(f"wrote {args.output}: graph {backward.name}, {len(graph)} forward values, {len(backward)} in all, "
          f"{len(backward.outputs) - 1} gradients")
    return 0


# --- compile --training -----------------------------------------------------------------
def run_training_compile(args: argparse.Namespace) -> int:
    target = cli_target(args.target, args)
    optimizer = optimizer_from_args(args)
    graph = read_graph(args)
    progress.show(f"differentiating and compiling the training step for {target.name} ...")
    started = time.perf_counter()
    backward = training_graph(graph, optimizer=optimizer)
    result = plan_training(graph, target, bindings_from(args), compile_options(args), backward, optimizer)
    seconds = time.perf_counter() - started
    progress.clear()
    verdict = FitReport.judge(target, result.verdict_arena_bytes, budget_from(args, target))
    plan = result.backward.plan
    report = {**result.summary(), "pipeline": target.pipeline, "training": True,
              "stages": reports.stages_json(result.backward.stages), "efficiency": round(plan.efficiency, 6),
              "planner": plan.planner, **verdict.to_json(), "seconds": round(seconds, 6)}
    if args.json:
        reports.print_json_report(args, report, plan)
    else:
        _print_training_compile(args, backward, result, verdict)
    return reports.verdict_exit(verdict, "this training step")


def _print_training_compile(args, backward, result: TrainingResult, verdict: FitReport) -> None:
    before = backward if args.emit == "mir" else None
    reports.print_report_head(args, result.target, before, result.backward.bindings)
    print(f"training step: {step_contents(result)}; forward graph {len(result.forward.graph)} nodes after the "
          "pipeline")
    reports.print_stage_table(result.backward.stages, "pass (training step)")
    plan = result.backward.plan
    forward = reports.human_bytes(result.forward_arena_bytes)
    print(f"forward arena   {forward}  (inference plan; fixes the weights' offsets)")
    print(f"training arena  {reports.human_bytes(result.arena_bytes)}  (the step: weights at the forward offsets, and "
          "everything it computes)")
    print_breakdown(result.breakdown)
    reports.print_lower_bound(plan, 16)
    reports.print_side_buffers(result.side_buffers, 16)
    for name, offset in result.appended_weights.items():
        print(f"appended weight %{name} at offset {offset} (not in the forward layout)")
    print(f"total           {reports.human_bytes(result.total_bytes)}  (training arena + side buffers)")
    reports.print_verdict(verdict, 16)
    reports.print_report_tail(args, result.backward.graph, plan)


BREAKDOWN_LABELS = {"weights": "weights", "optimizer_state": "optimizer state", "gradients": "gradients",
                    "activations": "activations", "workspace": "workspace", "unused": "unused"}


def step_contents(result: TrainingResult) -> str:
    """What the step computes, for a report's first line."""
    if result.optimizer is None:
        return f"the loss and {len(result.backward.graph.outputs) - 1} gradients (no optimizer)"
    weights = sum(1 for output in result.backward.graph.outputs if output.startswith("next.")
                  and not output.startswith("next.opt."))
    return (f"the loss, gradients and {result.optimizer.describe()} updating {weights} weights, "
            f"{len(result.optimizer_state)} state params")


def print_breakdown(breakdown: dict, indent: str = "  ") -> None:
    """The arena by part (rlxir.autodiff.arena_breakdown), each with its share of the arena."""
    total = sum(breakdown.values()) or 1
    for part, label in BREAKDOWN_LABELS.items():
        print(f"{indent}{label:<16}{reports.human_bytes(breakdown[part])}  ({breakdown[part] / total:.1%})")


# --- fit --training ---------------------------------------------------------------------
def training_arena_builder(graph, target, others: dict, batch_dim: str, options, optimizer=None):
    """`build(batch) -> arena bytes` for `fit_batch`: the training step's arena at that
    batch. The step (backward graph and update) is made once, symbolic, and bound per batch."""
    backward = training_graph(graph, optimizer=optimizer)

    def build(batch: int) -> int:
        return plan_training_arena_bytes(graph, target, {**others, batch_dim: batch}, options, backward, optimizer)

    return build


def training_breakdown_at(graph, target, bindings: dict, options, optimizer) -> dict:
    """The fit answer's step planned once more, for its arena by part and its optimizer."""
    result = plan_training(graph, target, bindings, options, optimizer=optimizer)
    return {"optimizer": result.optimizer.to_json() if result.optimizer else {"optimizer": "none"},
            "breakdown": result.breakdown}


# --- compare --training -----------------------------------------------------------------
def run_training_compare(args: argparse.Namespace) -> int:
    optimizer = optimizer_from_args(args)
    graph = read_graph(args)
    backward = training_graph(graph, optimizer=optimizer)
    bindings = bindings_from(args)
    reference = SharedReference(graph, bindings, training=True, optimizer=optimizer)
    return compare_targets(args, lambda target: _training_row(graph, backward, target, bindings, args, reference,
                                                              optimizer),
                           "compiling the training step for",
                           (("forward arena", "forward_arena_bytes"), ("training arena", "arena_bytes"),
                            ("lower bound", "lower_bound_bytes")))


def _training_row(graph, backward, target, bindings, args, reference, optimizer):
    result = plan_training(graph, target, bindings, backward=backward, optimizer=optimizer)
    verdict = FitReport.judge(target, result.verdict_arena_bytes, budget_from(args, target))
    made = row_fields(verdict, planner=result.backward.plan.planner, nodes=len(result.backward.graph),
                      forward_arena_bytes=result.forward_arena_bytes, arena_bytes=result.arena_bytes,
                      lower_bound_bytes=result.backward.lower_bound_bytes, total_bytes=result.total_bytes)
    if getattr(args, "html", None):
        step = result.backward
        made[0][PLAN_PAGE_KEY] = plan_page_entry(step.plan, step.graph, target.name,
                                                 title=f"{graph.name}: training step on {target.name}")
    if not getattr(args, "execute", False):
        return made

    def run_check():
        from rlxir.executor import check_execution

        shared = reference.get()
        progress.show(f"running the training step in its arena ({result.arena_bytes} B) and comparing ...")
        return check_execution(shared.graph, result, reference=shared)

    return with_execution(made, run_check)
