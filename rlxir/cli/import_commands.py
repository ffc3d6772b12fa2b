"""`rlxir import`: an ONNX model as rlx text (needs the ``onnx`` extra)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from rlxir.cli.model_inputs import checked_text
from rlxir.cli.options import BATCH_SYMBOL, add_command, checked_name, positive_int
from rlxir.cli.output_files import (add_output_option, atomic_output, checked_output_file, output_directory,
                                    print_or_write)
from rlxir.errors import RlxError
from rlxir.printer import print_graph


def register(subparsers) -> None:
    command = add_command(subparsers, "import", run_import, "import an ONNX model as an .rlx graph",
                          epilog="example: rlxir import resnet50.onnx -o resnet50.rlx && "
                                 "rlxir compile resnet50.rlx --target rocm --batch 8")
    command.add_argument("model", metavar="MODEL", help="an .onnx file")
    add_output_option(command, "the graph")
    command.add_argument("--batch-dim", metavar="SYM", default=BATCH_SYMBOL,
                         help=f"the batch symbol's name (default: {BATCH_SYMBOL})")
    command.add_argument("--batch-size", metavar="N", type=positive_int,
                         help="fix the batch to N instead of making it a symbol")
    command.add_argument("--name", metavar="NAME", help="the graph's name (default: the model's graph name)")
    command.add_argument("--weights", metavar="DIR",
                         help="also write every param's value to DIR/<name>.npy (feed them to rlxir run with --params DIR)")


def checked_model_file(path: str) -> None:
    """A 0-byte file is no model; onnx would read it as an empty graph."""
    if Path(path).is_file() and Path(path).stat().st_size == 0:
        raise RlxError(f"{path} is empty (0 bytes), not an ONNX model", expected="an .onnx file written by onnx.save")


def run_import(args: argparse.Namespace) -> int:
    """Read MODEL.onnx with the onnx package, map every node to core ops and print the graph as rlx
    text (to OUT with -o). Initializers (and the ConstantOfShape weights of the onnx test models)
    become params; small constants become literals; shape arithmetic is evaluated. The leading dim
    of the inputs becomes the batch symbol (a static one keeps its value as the symbol's default);
    --batch-size fixes it instead. A model with ops rlxir cannot map is refused with one error
    listing every such op type and its count. Needs: pip install 'rlxir[onnx]'."""
    checked_name(args.batch_dim, "--batch-dim", dots=False)
    checked_name(args.name, "--name")
    if args.output:
        checked_output_file(args.output, "-o", [args.model], args.in_place)
    if args.weights:
        output_directory(args.weights, "--weights")
    try:
        from rlxir.importers.onnx import import_onnx
    except ModuleNotFoundError as error:
        if error.name not in ("onnx", "google", "google.protobuf"):
            raise
        raise RlxError("rlxir import needs the onnx package, which is not installed",
                       expected="pip install 'rlxir[onnx]'") from None
    checked_model_file(args.model)
    try:
        imported = import_onnx(args.model, batch_dim=args.batch_dim, batch_size=args.batch_size, name=args.name)
    except RlxError as error:
        if error.loc is not None or args.model in error.message:
            raise
        raise RlxError(f"{args.model}: {error.message}", expected=error.expected) from None
    for note in imported.notes:
        print(f"{args.model}: note: {note}", file=sys.stderr)
    text = print_graph(imported.graph)
    checked_text(text, args.model)
    if args.weights:
        write_weights(imported.params, Path(args.weights))
    if not print_or_write(args.output, text):
        return 0
    graph = imported.graph
    param_bytes = sum(array.nbytes for array in imported.params.values())
    symbols = ", ".join(name if value is None else f"{name}={value}" for name, value in graph.symbols.items())
    print(f"wrote {args.output}: graph {graph.name}({symbols}), {len(graph)} values ({len(graph.ops())} ops, "
          f"{len(graph.params())} params of {param_bytes} bytes)")
    return 0


def write_weights(params: dict, directory: Path) -> None:
    folder = output_directory(str(directory), "--weights")
    for name, array in params.items():
        with atomic_output(folder / f"{name}.npy", binary=True) as handle:
            np.save(handle, np.ascontiguousarray(array))


__all__ = ["register", "run_import"]
