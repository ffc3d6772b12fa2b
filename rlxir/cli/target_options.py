"""Options of the commands that compile for a target: the target, its planner, pipeline
insertions, the device budget and `--training`, and the values they make.

Defaults are the library's own (`DEFAULT_HEADROOM`, `DEFAULT_TIME_BUDGET`, the target
registry), so help text and behaviour cannot drift from what `rlxir.compiler.budget`, `rlxir.compiler.fit` and the planners do.
"""

from __future__ import annotations

import argparse

from rlxir.cli import progress
from rlxir.cli.options import UsageError, positive_int, time_budget
from rlxir.compiler.compile import CompileOptions
from rlxir.targets.devices import parse_bytes
from rlxir.errors import RlxError
from rlxir.compiler.budget import DEFAULT_HEADROOM, Budget, arena_budget
from rlxir.autodiff.optimizers import DEFAULT_OPTIMIZER, DEFAULT_WEIGHT_DECAY, OPTIMIZERS, Optimizer, optimizer_from
from rlxir.pass_machinery.pass_base import load_plugin
from rlxir.pass_machinery.pipeline import parse_pipeline
from rlxir.planning import DEFAULT_TIME_BUDGET, PLANNERS
from rlxir.targets.target import Target, available_targets, get_target


def target_names() -> str:
    """The registered targets, for help text: ``cpu, cuda, ...``."""
    return ", ".join(available_targets())


def bytes_arg(text: str) -> int:
    """argparse type for a size: ``24GiB``, ``80GB`` or a count of bytes."""
    try:
        return parse_bytes(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def headroom_arg(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"headroom must be in (0, 1], got {text}")
    return value


def add_planner_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--planner", choices=sorted(PLANNERS), help="plan with this planner instead of the target's")
    parser.add_argument("--alignment", type=positive_int, metavar="N", help="alignment in bytes instead of the target's")
    parser.add_argument("--sizing", choices=("dtype", "f32"), help="bytes per element: the dtype's, or 4 for all")
    parser.add_argument("--time-budget", type=time_budget, metavar="S",
                        help=f"seconds for the best planner (default {DEFAULT_TIME_BUDGET:g})")


def add_pipeline_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--insert-after", metavar="PASS=SPEC", action="append", default=[],
                        help="run SPEC (passes with options) after PASS in the target's pipeline (repeatable)")
    parser.add_argument("--insert-before", metavar="PASS=SPEC", action="append", default=[],
                        help="run SPEC before PASS in the target's pipeline (repeatable)")
    parser.add_argument("--plugin", metavar="MODULE", action="append", default=[],
                        help="import MODULE first so the passes it registers can be inserted (repeatable)")


def add_budget_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--vram", type=bytes_arg, metavar="BYTES",
                        help="device memory instead of the probe's answer: 24GiB, 80GB or 25769803776")
    parser.add_argument("--headroom", type=headroom_arg, default=DEFAULT_HEADROOM,
                        help="share of device memory the arena and side buffers may use "
                             f"(default {DEFAULT_HEADROOM:g})")
    parser.add_argument("--free", action="store_true", help="probe free device memory instead of total")


def add_compile_options(parser: argparse.ArgumentParser) -> None:
    """Everything `compile` and `fit` take besides the graph and the target: planner,
    pipeline insertions, budget and --training."""
    add_planner_options(parser)
    add_pipeline_options(parser)
    add_budget_options(parser)
    add_training_option(parser)


def add_training_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--training", action="store_true",
                        help="size the training step instead: the graph's scalar loss differentiated with respect to "
                             "its params (rlxir grad) and the optimizer's update, planned with the weights at the "
                             "forward plan's offsets")
    add_optimizer_options(parser)


def add_optimizer_options(parser: argparse.ArgumentParser) -> None:
    """--optimizer and its hyper-parameters (PyTorch's defaults, `rlxir.autodiff.optimizers`)."""
    group = parser.add_argument_group("optimizer", "with --training: the update the step ends with, as core ops; "
                                                   "its state (momentum, Adam's m and v, an f32 master copy of "
                                                   "f16/bf16 weights) is sized with the step")
    group.add_argument("--optimizer", choices=(*OPTIMIZERS, "none"),
                       help=f"default {DEFAULT_OPTIMIZER}; none stops at the gradients")
    defaults = Optimizer()
    group.add_argument("--lr", type=float, metavar="X", help=f"learning rate (default {defaults.lr:g})")
    group.add_argument("--momentum", type=float, metavar="X",
                       help=f"momentum's factor (default {defaults.momentum:g})")
    group.add_argument("--beta1", type=float, metavar="X", help=f"Adam's beta1 (default {defaults.beta1:g})")
    group.add_argument("--beta2", type=float, metavar="X", help=f"Adam's beta2 (default {defaults.beta2:g})")
    group.add_argument("--eps", type=float, metavar="X", help=f"Adam's epsilon (default {defaults.eps:g})")
    group.add_argument("--weight-decay", type=float, metavar="X",
                       help="weight decay (default " + ", ".join(f"{kind} {value:g}" for kind, value in
                                                                   DEFAULT_WEIGHT_DECAY.items()) + ")")


OPTIMIZER_OPTIONS = ("lr", "momentum", "beta1", "beta2", "eps", "weight_decay")


def optimizer_from_args(args: argparse.Namespace) -> Optimizer | None:
    """The optimizer the options name (None for --optimizer none); a hyper-parameter the
    optimizer does not use is a usage error rather than silently ignored."""
    given = {name: getattr(args, name, None) for name in OPTIMIZER_OPTIONS}
    given = {name: value for name, value in given.items() if value is not None}
    training = getattr(args, "training", False)
    if getattr(args, "optimizer", None) and not training:
        raise UsageError("--optimizer needs --training")
    if given and not training:
        raise UsageError(f"--{next(iter(given)).replace('_', '-')} needs --training")
    kind = getattr(args, "optimizer", None) or DEFAULT_OPTIMIZER
    used = {"sgd": ("lr", "weight_decay"), "momentum": ("lr", "momentum", "weight_decay"), "none": ()}
    unused = [name for name in given if name not in used.get(kind, ("lr", "beta1", "beta2", "eps", "weight_decay"))]
    if unused:
        raise UsageError(f"--optimizer {kind} has no --{unused[0].replace('_', '-')}")
    return optimizer_from(kind, given)


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


def compile_options(args: argparse.Namespace, shown_for: Target | None = None) -> CompileOptions:
    """The planner overrides the options give; with `shown_for`, each pass and the planning
    are named on a terminal while that target compiles."""
    planner = getattr(args, "planner", None)
    instruments = () if shown_for is None else (_pass_progress(shown_for, planner or shown_for.planner),)
    return CompileOptions(planner=planner, alignment=getattr(args, "alignment", None),
                          sizing=getattr(args, "sizing", None), time_budget=getattr(args, "time_budget", None),
                          instruments=instruments)


def _pass_progress(target: Target, planner: str) -> progress.PassProgress:
    total = len(parse_pipeline(target.pipeline).entries)
    return progress.PassProgress(f"compiling for {target.name}", total, planner)


def budget_from(args: argparse.Namespace, target: Target) -> Budget:
    """What the arena may use on `target`'s device, as --vram, --headroom and --free say.
    --vram 0 is refused: no arena fits it, so every answer would be 'does not fit'."""
    if args.vram == 0:
        raise RlxError("--vram 0: a device with no memory fits no arena", expected="a size above 0, e.g. 24GiB")
    return arena_budget(target, args.headroom, args.vram, "free" if args.free else "total")
