"""`rlxir grad`, and the training step behind `compile`, `fit` and `compare --training`.

`grad` writes the backward graph of a loss (rlxir.grad) as an .rlx file. With
`--training`, compile/fit/compare size the training step — the backward graph planned
with its weights at the forward plan's offsets (rlxir.training) — through one code path,
`rlxir.training.plan_training`, so what `fit` reports for a batch is what
`compile --training` plans at that batch.
"""

from __future__ import annotations

import argparse
import json
import time

from rlxir.autodiff import grad
from rlxir.cli.options import add_input_options, bind_graphs, bindings_from, load_module
from rlxir.cli.output_files import add_output_option, checked_output_file, write_text_output
from rlxir.cli.target_commands import (SharedReference, _graph, _human, _options, _progress, _progress_done, cli_target,
                                       compare_targets, execution_column, report_refusal)
from rlxir.compiler import exceeds_ceiling, fit_verdict, verdict_text
from rlxir.fit import arena_budget
from rlxir.printer import print_graph
from rlxir.training import TrainingResult, plan_training, training_graph


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "grad", help="write the backward graph of a loss",
        description="Differentiate the graph's one output, a scalar loss, with respect to its params (or --wrt) "
                    "and write the backward graph: the forward computation followed by the backward one, whose "
                    "outputs are the loss and one gradient per value, named grad.<value>. Fused ops without a "
                    "gradient rule of their own are unfused first; an op with no gradient on the way from a "
                    "value to the loss is an error at its line. -D/--batch specialise the graph first.",
        epilog="example: rlxir grad examples/mamba_lm.rlx -o mamba_lm.grad.rlx")
    add_input_options(parser)
    add_output_option(parser, "the backward graph")
    parser.add_argument("--wrt", metavar="NAMES",
                        help="comma-separated inputs or params to differentiate with respect to (default: every "
                             "floating-point param)")
    parser.set_defaults(run=run_grad)


def run_grad(args: argparse.Namespace) -> int:
    if args.output:
        checked_output_file(args.output, "-o", [args.file], args.in_place)
    module = load_module(args)
    graph = module[args.graph] if args.graph else module.main
    graph = bind_graphs([graph], bindings_from(args))[0]
    wrt = [name.strip() for name in args.wrt.split(",") if name.strip()] if args.wrt else None
    backward = grad(graph, wrt)
    text = print_graph(backward)
    if not args.output:
        print(text, end="")
        return 0
    write_text_output(args.output, text)
    print(f"wrote {args.output}: graph {backward.name}, {len(graph)} forward values, {len(backward)} in all, "
          f"{len(backward.outputs) - 1} gradients")
    return 0


# --- compile --training -----------------------------------------------------------------
def run_training_compile(args: argparse.Namespace) -> int:
    target = cli_target(args.target, args)
    graph = _graph(args)
    options = _options(args)
    _progress(f"differentiating and compiling the training step for {target.name} ...")
    started = time.perf_counter()
    result = plan_training(graph, target, bindings_from(args), options)
    seconds = time.perf_counter() - started
    _progress_done()
    refused = exceeds_ceiling(target, result.arena_bytes) or exceeds_ceiling(target, result.forward_arena_bytes)
    budget = arena_budget(target, args.headroom, args.vram, "free" if args.free else "total")
    arena = max(result.arena_bytes, result.forward_arena_bytes) if refused else result.arena_bytes
    fits, reason = fit_verdict(target, arena, budget.bytes)
    report = {**result.summary(), "pipeline": target.pipeline, "training": True,
              "stages": [{"pass": stage.spec, "nodes_before": stage.nodes_before, "nodes_after": stage.nodes_after,
                          "seconds": round(stage.seconds, 6)} for stage in result.backward.stages],
              "efficiency": round(result.backward.plan.efficiency, 6), "planner": result.backward.plan.planner,
              "ceiling_bytes": target.arena_ceiling, "budget_bytes": budget.bytes, "budget": budget.explain(),
              "refused": refused, "fits": fits, "fits_reason": reason, "seconds": round(seconds, 6)}
    if args.json:
        if args.emit == "plan":
            report["plan"] = result.backward.plan.to_json()
        print(json.dumps(report, indent=2))
    else:
        _print_training_compile(args, result, report)
    return report_refusal(target, "this training step", arena, report)


def _print_training_compile(args, result: TrainingResult, report: dict) -> None:
    target = result.target
    if args.emit == "mir":
        print(print_graph(training_graph(_graph(args))))
    if args.print_pipeline:
        print(f"pipeline  {target.pipeline}\n")
    bound = ", ".join(f"{symbol}={value}" for symbol, value in result.backward.bindings.items()) or "none"
    gradients = len(result.backward.graph.outputs) - 1
    print(f"target {target.name} ({target.description}); symbols {bound}")
    print(f"training step: the loss and {gradients} gradients; forward graph {len(result.forward.graph)} nodes "
          f"after the pipeline")
    stages = result.backward.stages
    width = max((len(stage.spec) for stage in stages), default=10)
    print(f"\n  {'pass (training step)':<{width}}  {'nodes in':>9}  {'nodes out':>9}")
    for stage in stages:
        print(f"  {stage.spec:<{width}}  {stage.nodes_before:>9}  {stage.nodes_after:>9}")
    plan = result.backward.plan
    print()
    print(f"forward arena   {_human(result.forward_arena_bytes)}  (inference plan; fixes the weights' offsets)")
    print(f"training arena  {_human(result.arena_bytes)}  (the step: weights at the forward offsets, and "
          "everything it computes)")
    print(f"  weights       {_human(result.weight_bytes)}")
    print(f"lower bound     {_human(plan.lower_bound_bytes)}  (planner efficiency {plan.efficiency:.1%}, "
          f"{plan.planner}, alignment {plan.alignment}, sizing {plan.sizing})")
    for name, size in result.side_buffers.items():
        print(f"side buffer     {name} {_human(size)} (outside the arena)")
    for name, offset in result.appended_weights.items():
        print(f"appended weight %{name} at offset {offset} (not in the forward layout)")
    print(f"total           {_human(result.total_bytes)}  (training arena + side buffers)")
    ceiling = _human(target.arena_ceiling) if target.arena_ceiling is not None else "none (64-bit)"
    print(f"ceiling         {ceiling}")
    print(f"budget          {report['budget']}")
    print(f"fits            {verdict_text(report['fits'], report['fits_reason'])}")
    if args.emit == "lir":
        print()
        print(print_graph(result.backward.graph))
    if args.emit == "plan":
        print()
        print(plan.table(limit=None))


# --- fit --training ---------------------------------------------------------------------
def training_arena_builder(graph, target, others: dict, batch_dim: str, options):
    """`build(batch) -> arena bytes` for `fit_batch`: the training step's arena at that
    batch. The backward graph is made once, symbolic, and bound per batch."""
    backward = training_graph(graph)

    def build(batch: int) -> int:
        return plan_training(graph, target, {**others, batch_dim: batch}, options, backward).arena_bytes

    return build


# --- compare --training -----------------------------------------------------------------
def run_training_compare(args: argparse.Namespace) -> int:
    graph = _graph(args)
    backward = training_graph(graph)
    bindings = bindings_from(args)
    reference = SharedReference(graph, bindings, training=True)
    return compare_targets(args, lambda target: _training_row(graph, backward, target, bindings, args, reference),
                           "compiling the training step for",
                           (("forward arena", "forward_arena_bytes"), ("training arena", "arena_bytes"),
                            ("lower bound", "lower_bound_bytes")))


def _training_row(graph, backward, target, bindings, args, reference) -> dict:
    result = plan_training(graph, target, bindings, backward=backward)
    row = _training_numbers(result, target, args)
    if not getattr(args, "execute", False):
        return row

    def run_check():
        from rlxir.executor import check_execution

        bound = graph.bind(bindings) if bindings else graph
        return check_execution(bound, result, reference=reference.get())

    return execution_column(row, run_check)


def _training_numbers(result, target, args) -> dict:
    budget = arena_budget(target, args.headroom, args.vram, "free" if args.free else "total")
    refused = exceeds_ceiling(target, result.forward_arena_bytes)
    fits, reason = fit_verdict(target, result.forward_arena_bytes if refused else result.arena_bytes, budget.bytes)
    return {"target": target.name, "planner": result.backward.plan.planner, "nodes": len(result.backward.graph),
            "forward_arena_bytes": result.forward_arena_bytes, "arena_bytes": result.arena_bytes,
            "lower_bound_bytes": result.backward.lower_bound_bytes, "total_bytes": result.total_bytes,
            "ceiling_bytes": target.arena_ceiling, "budget_bytes": budget.bytes, "fits": fits, "fits_reason": reason}
