"""`rlxir run`: run a graph with the NumPy reference interpreter, or — with `--target` — the
target's compiled graph inside its planned arena, checked against the interpreter."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

from rlxir.cli import progress
from rlxir.cli.host_memory import check_arena_run_memory, check_interpreter_memory
from rlxir.cli.options import add_command, add_input_options, load_graph, model_weights
from rlxir.cli.output_files import atomic_output, checked_directory_files, output_directory
from rlxir.cli.target_options import add_optimizer_options, compile_options, optimizer_from_args, target_names
from rlxir.errors import RlxError
from rlxir.ir.graph import Graph
from rlxir.interpreter import interpret
from rlxir.compiler.params import load_params, read_npy
from rlxir.ir.verifier import verify


def register(subparsers) -> None:
    run = add_command(subparsers, "run", run_graph, "run a graph with the NumPy reference interpreter",
                      formatter_class=argparse.RawDescriptionHelpFormatter,  # the examples keep their lines
                      epilog="examples:\n  rlxir run examples/mlp.rlx --batch 2 --input x=x.npy -o out/\n"
                             "  rlxir run examples/gpt2_small.rlx --target rocm --batch 2\n"
                             "  rlxir run examples/mamba_lm.rlx --target cuda --batch 1 --training")
    add_input_options(run)
    run.add_argument("--input", "-i", dest="feeds", metavar="NAME=FILE", action="append", type=named_file, default=[],
                     help="feed input or param NAME from the .npy FILE (repeatable); it must have the value's shape "
                          "and dtype (float32 for bf16)")
    run.add_argument("--params", metavar="DIR", help="feed params from DIR/<name>.npy, the files `rlxir import "
                     "--weights DIR` writes (an --input of the same name wins)")
    run.add_argument("--strict-params", action="store_true",
                     help="refuse a param that neither --params DIR nor --input gives (by default it is filled "
                          "from --seed, with a note on stderr naming it)")
    run.add_argument("--seed", metavar="N", type=non_negative_int, default=0,
                     help="seed of the values not given with --input (default: 0)")
    run.add_argument("-o", "--output-dir", metavar="DIR", help="write each output to DIR/<name>.npy")
    arena = run.add_argument_group(
        "arena run", "With --target, compile the graph for T and run its final graph inside one arena of exactly "
                     "the planned size (every value in its planned slot, dead buffers poisoned), then compare the "
                     "outputs with the interpreter on the original graph; exit 1 when they differ")
    arena.add_argument("--target", "-t", metavar="T", help=target_names())
    arena.add_argument("--device", choices=("cpu", "gpu"), default="cpu",
                       help="run the kernels with NumPy (cpu, default) or CuPy on a CUDA GPU (gpu; rlxir[cuda])")
    arena.add_argument("--training", action="store_true",
                       help="run the training step (the loss, its gradients and the optimizer's update: "
                            "--optimizer, default adamw) in the training arena")
    arena.add_argument("--no-check", dest="check", action="store_false",
                       help="skip the comparison with the reference interpreter")
    arena.add_argument("--json", action="store_true", help="print the run report as JSON")
    add_optimizer_options(run)


def named_file(text: str) -> tuple[str, str]:
    """argparse type for ``NAME=FILE`` (NAME may start with ``%``)."""
    match = re.fullmatch(r"%?([A-Za-z0-9_.]+)=(.+)", text)
    if match is None:
        raise argparse.ArgumentTypeError(f"expected NAME=FILE, got {text!r}")
    return match.group(1), match.group(2)


def non_negative_int(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return int(text)


def run_graph(args: argparse.Namespace) -> int:
    """Run a graph of FILE node by node with each op's NumPy reference and print a
    summary of every output (shape, dtype, mean, min, max), or write each output to
    DIR/<name>.npy with -o. Inputs and params come from .npy files (--input
    NAME=FILE); the rest are filled deterministically from --seed. bf16 values are
    float32 arrays rounded to bf16 precision. With --target, the target's compiled
    graph runs in its planned arena instead (see the arena run options)."""
    graph = load_graph(args)
    verify(graph)
    inputs, params = load_feeds(graph, args.feeds)
    params = {**model_weights(args), **(load_params(args.params, graph) if args.params else {}), **params}
    report_unfed_params(args, graph, params)
    if args.target:
        return run_in_target_arena(args, graph, inputs, params)
    for flag, given in (("--training", args.training), ("--json", args.json), ("--no-check", not args.check),
                        ("--device gpu", args.device != "cpu")):
        if given:
            raise RlxError(f"{flag} needs --target", expected="rlxir run FILE --target T ...")
    if args.output_dir:
        folder = output_directory(args.output_dir, "-o")
        checked_directory_files(output_paths(folder, graph.outputs), "-o", read_paths(args))
    check_interpreter_memory(graph)
    results = interpret(graph, inputs, params, seed=args.seed)
    if args.output_dir:
        write_outputs(results, Path(args.output_dir), graph, read_paths(args))
    else:
        for name, array in results.items():
            print(output_summary(name, array, graph))
    return 0


def report_unfed_params(args: argparse.Namespace, graph: Graph, params: dict) -> None:
    """With --params DIR, a param that has no file there (nor an --input) is filled from
    --seed: say which on stderr, or refuse with --strict-params."""
    if not (args.params or args.strict_params):
        return
    unfed = [name for name in graph.params() if name not in params]
    if not unfed:
        return
    listed = ", ".join("%" + name for name in unfed[:8]) + (", ..." if len(unfed) > 8 else "")
    where = f"in {args.params}" if args.params else "(no --params DIR)"
    if args.strict_params:
        raise RlxError(f"--strict-params: no file {where} for {listed}",
                       graph.location(unfed[0]), expected="a <name>.npy for every param, or --input NAME=FILE")
    print(f"rlxir run: note: {len(unfed)} param(s) have no file {where} and are filled from --seed "
          f"{args.seed}: {listed}", file=sys.stderr)


def run_in_target_arena(args: argparse.Namespace, graph: Graph, inputs: dict, params: dict) -> int:
    """`rlxir run --target`: compile, run in the planned arena, check, report."""
    from rlxir.compiler.compile import compile as compile_graph
    from rlxir.executor import check_execution, reference_run, run_in_arena
    from rlxir.executor.runner import compiled_step
    from rlxir.targets.target import get_target
    from rlxir.autodiff.training import compile_training, training_graph

    optimizer = optimizer_from_args(args)
    if args.training:
        graph = graph.bind({symbol: default for symbol, default in graph.symbols.items() if default is not None})
    # what the compiled graph computes, differentiated once for --training
    shown = training_graph(graph, optimizer=optimizer) if args.training else graph
    # on a terminal, each pass and the planning are named while the target compiles
    options = compile_options(args, shown_for=get_target(args.target))
    progress.show(f"compiling for {args.target} ...")
    try:
        result = (compile_training(graph, args.target, options=options, backward=shown, optimizer=optimizer)
                  if args.training else compile_graph(graph, args.target, options=options))
    finally:
        progress.clear()
    step = compiled_step(result)
    arena_bytes = step.arena_bytes + sum(step.side_buffers.values())
    if args.check and args.device != "cpu":
        check = check_gpu_run(args, graph, shown, result, inputs, params, arena_bytes)
        run = check.run
    elif args.check:
        check_arena_run_memory(shown, step.graph, dict(step.bindings), arena_bytes, args.device)
        progress.show("running the reference interpreter ...")
        try:
            reference = reference_run(shown, dict(compiled_step(result).bindings), inputs, params, args.seed)
            progress.show(f"running the plan in its arena ({arena_bytes} B) and comparing ...")
            check = check_execution(graph, result, device=args.device, reference=reference)
        finally:
            progress.clear()
        run = check.run
    else:
        check_arena_run_memory(None, step.graph, dict(step.bindings), arena_bytes, args.device)
        progress.show(f"running the plan in its arena ({arena_bytes} B) ...")
        try:
            # the outputs are read where the run left them: their slots (on a GPU, device arrays)
            check, run = None, run_in_arena(result, inputs, params, args.seed, args.device, to_host=False)
        finally:
            progress.clear()
    outputs = dict(zip(shown.outputs, run.outputs.values()))
    if args.json:
        report = check.summary() if check else {"run": run.summary()}
        report["outputs_summary"] = [output_summary(name, array, shown) for name, array in outputs.items()]
        print(json.dumps(report, indent=2))
    else:
        if args.output_dir:
            write_outputs(outputs, Path(args.output_dir), shown, read_paths(args))
        else:
            for name, array in outputs.items():
                print(output_summary(name, array, shown))
        print()
        print(arena_report(run, check))
    if check is not None and not check.matched:
        print(mismatch_error(run.target, check).render(), file=sys.stderr)
        return 1
    return 0


def check_gpu_run(args: argparse.Namespace, graph: Graph, shown: Graph, result, inputs: dict, params: dict,
                  arena_bytes: int):
    """The arena run on the GPU, checked where it ran (`rlxir.executor.device_check`): the
    reference on the device, or on a sample of batch rows when the full one does not fit."""
    from rlxir.cli.host_memory import available_memory_bytes, check_device_check_memory
    from rlxir.cli.options import bindings_from, read_graph
    from rlxir.executor.device_check import check_on_device, free_device_memory, plan_device_check
    from rlxir.interpreter import bind_for_run

    bindings = bindings_from(args)
    reference = bind_for_run(shown)
    unbound = None if args.training else read_graph(args)
    available = available_memory_bytes()
    plan = plan_device_check(reference, unbound, args.batch_dim, arena_bytes, free_device_memory(args.device),
                             available[0] if available else None)
    check_device_check_memory(plan, reference, unbound, bindings)
    progress.show(f"running in the arena on the GPU, then checking {plan.scope()} ...")
    try:
        return check_on_device(reference, unbound, bindings, result, plan, inputs, params, args.seed, args.device)
    finally:
        progress.clear()


EXPECTED_BY_CAUSE = {
    "defect": "a plan whose every buffer is live while it is read (this is a defect in the target's pipeline "
              "or planner)",
    "storage": "storage that holds every value (the target's sizing changed values: see 'storage' above)",
    "precision": "a difference within the tolerance of the least precise dtype the output depends on (a "
                 "precision difference of the target's arithmetic, not a planner defect)",
}


def mismatch_error(target: str, check) -> RlxError:
    """The diagnostic for a run that does not match, worded by its cause."""
    return RlxError(f"the {target} arena run does not match the reference: {check.verdict}",
                    expected=EXPECTED_BY_CAUSE[check.cause])


def arena_report(run, check) -> str:
    """The run in words: arena, side buffers, memory outside them, kernels, storage, check."""
    from rlxir.targets.devices import format_bytes

    share = run.outside_peak_bytes / run.arena_bytes if run.arena_bytes else 0.0
    lines = [
        f"arena run   {run.target} on {run.device}: one arena of {run.arena_bytes} B ({format_bytes(run.arena_bytes)}), "
        f"side buffers {run.side_buffer_bytes} B ({format_bytes(run.side_buffer_bytes)})",
        f"  steps     {run.steps} in {run.seconds:.3f} s; {format_bytes(run.poisoned_bytes)} of dead buffers poisoned",
        f"  outside   {run.outside_peak_bytes} B ({format_bytes(run.outside_peak_bytes)}) held beyond the arena and "
        f"side buffers at the peak ({share:.1%} of the arena)",
    ]
    if run.device_used_peak is not None:
        lines.append(f"  device    {format_bytes(run.device_used_peak)} in use at the peak (NVML), "
                     f"{format_bytes(run.device_used_before or 0)} before the arena")
    if run.reference_ops:
        counts = {op: run.reference_ops.count(op) for op in sorted(set(run.reference_ops))}
        listed = ", ".join(f"{op} x{count}" for op, count in counts.items())
        lines.append(f"  kernels   through the host reference (result copied into the slot): {listed}")
    else:
        lines.append("  kernels   every op wrote its slot")
    if run.storage_losses:
        lines.append(f"  storage   {len(run.storage_losses)} value(s) changed by {run.sizing} storage:")
        lines.extend(f"            {loss.text()}" for loss in run.storage_losses[:10])
    else:
        lines.append(f"  storage   exact ({run.sizing} sizing)")
    if run.poisoned_reads:
        lines.append(f"  poison    {len(run.poisoned_reads)} read(s) of dead memory, first: %{run.poisoned_reads[0][0]} "
                     f"read %{run.poisoned_reads[0][1]}")
    if check is not None:
        worst = max((output.max_abs_error for output in check.outputs), default=0.0)
        lines.append(f"  check     {check.verdict} ({check.scope}; max abs error {worst:.3g})")
        closest = check.closest_call
        if closest is not None and check.cause in ("matched", "precision"):
            lines.append(f"  precision {closest.text()}")
    return "\n".join(lines)


def load_feeds(graph: Graph, feeds: list[tuple[str, str]]) -> tuple[dict, dict]:
    """(inputs, params) read from the ``NAME=FILE`` pairs; each NAME must be an input or a param."""
    by_kind: dict[str, dict] = {"input": {}, "param": {}}
    for name, path in feeds:
        kind = graph.kind(name) if name in graph else None
        if kind not in by_kind:
            fed = ", ".join("%" + value for value in graph.inputs() + graph.params()) or "none"
            raise RlxError(f"--input {name}: graph {graph.name} has no input or param %{name}",
                           expected=f"one of: {fed}")
        if name in by_kind[kind]:
            raise RlxError(f"--input {name} is given twice")
        by_kind[kind][name] = read_array(path)
    return by_kind["input"], by_kind["param"]


read_array = read_npy  # --input files read as --params files are


def output_summary(name: str, array: np.ndarray, graph: Graph) -> str:
    """One line: ``%name  TYPE  mean .. min .. max ..`` (bools count as 0 and 1)."""
    head = f"%{name}  {type_text(name, array, graph)}"
    if array.size == 0:
        return f"{head}  (empty)"
    # statistics taken in place (a float64 copy of a large output would double its memory)
    values = np.abs(array) if np.iscomplexobj(array) else array
    mean, low, high = np.mean(values, dtype=np.float64), float(np.min(values)), float(np.max(values))
    return f"{head}  mean {mean:.6g}  min {low:.6g}  max {high:.6g}"


def type_text(name: str, array: np.ndarray, graph: Graph) -> str:
    """The IR type of an output as run, e.g. ``bf16[2, 6]`` (its dims are the array's)."""
    return f"{graph.type(name).dtype}[{', '.join(str(dim) for dim in array.shape)}]"


def output_paths(directory: Path, names) -> list[Path]:
    """Where -o DIR puts each output: DIR/<name>.npy."""
    return [directory / f"{name}.npy" for name in names]


def read_paths(args: argparse.Namespace) -> list[str | Path]:
    """Every file the run reads (its graph, --input files, --params files): -o never writes one."""
    paths: list[str | Path] = [args.file, *(path for _, path in args.feeds)]
    if args.params and Path(args.params).is_dir():
        paths += sorted(Path(args.params).glob("*.npy"))
    return paths


def write_outputs(results: dict[str, np.ndarray], directory: Path, graph: Graph, inputs=()) -> None:
    """Each output to DIR/<name>.npy (bf16 as float32), one line per file written; none
    is written when one would go through a link or over one of `inputs`."""
    output_directory(str(directory), "-o")
    checked_directory_files(output_paths(directory, results), "-o", inputs)
    for name, array in results.items():
        path = directory / f"{name}.npy"
        with atomic_output(path, binary=True) as handle:
            np.save(handle, array if isinstance(array, np.ndarray) else array.get())  # a device output: one copy
        print(f"wrote {path}  {type_text(name, array, graph)}")


__all__ = ["register", "run_graph", "load_feeds", "output_summary"]
