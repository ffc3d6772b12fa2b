"""`rlxir import`: an ONNX model as rlx text (needs the ``onnx`` extra)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from rlxir.cli.model_inputs import checked_text
from rlxir.cli.options import BATCH_SYMBOL, add_command, checked_name, positive_int
from rlxir.cli.output_files import (STANDARD_INPUT, add_output_option, atomic_output, checked_directory_files,
                                    checked_output_file, output_directory, print_or_write)
from rlxir.errors import RlxError
from rlxir.compiler.params import NPY_MAGIC
from rlxir.ir.printer import print_graph


def register(subparsers) -> None:
    command = add_command(subparsers, "import", run_import, "import an ONNX model as an .rlx graph",
                          epilog="example: rlxir import resnet50.onnx -o resnet50.rlx && "
                                 "rlxir compile resnet50.rlx --target rocm --batch 8")
    command.add_argument("model", metavar="MODEL", help="an .onnx file, or - for standard input")
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


def read_model(path: str):
    """The model to import: `path` itself, or for `-` the ModelProto read from standard input
    (its external data, if any, relative to the working directory)."""
    if path != STANDARD_INPUT:
        return path
    import onnx
    from onnx.external_data_helper import load_external_data_for_model, uses_external_data

    if sys.stdin is None:
        raise RlxError("cannot read the model from standard input: it is closed", expected="rlxir import - < model.onnx")
    data = sys.stdin.buffer.read()
    if not data:
        raise RlxError("standard input is empty, not an ONNX model", expected="rlxir import - < model.onnx")
    try:
        model = onnx.load_model_from_string(data)
    except Exception as error:  # protobuf's DecodeError and friends
        raise RlxError(f"cannot read standard input as an ONNX model: {error}", expected="an .onnx file") from None
    if any(uses_external_data(tensor) for tensor in model.graph.initializer):
        try:
            load_external_data_for_model(model, ".")
        except OSError as error:
            raise RlxError(f"cannot read the model's external data: {error.strerror or error}",
                           expected="its data files in the working directory") from None
    return model


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
        imported = import_onnx(read_model(args.model), batch_dim=args.batch_dim, batch_size=args.batch_size,
                               name=args.name)
    except RlxError as error:
        if error.loc is not None or args.model in error.message:
            raise
        raise RlxError(f"{args.model}: {error.message}", expected=error.expected) from None
    for note in imported.notes:
        print(f"{args.model}: note: {note}", file=sys.stderr)
    text = print_graph(imported.graph)
    checked_text(text, args.model)
    if args.weights:
        write_weights(imported.params, Path(args.weights), args.model)
    if not print_or_write(args.output, text):
        return 0
    graph = imported.graph
    param_bytes = sum(array.nbytes for array in imported.params.values())
    symbols = ", ".join(name if value is None else f"{name}={value}" for name, value in graph.symbols.items())
    print(f"wrote {args.output}: graph {graph.name}({symbols}), {len(graph)} values ({len(graph.ops())} ops, "
          f"{len(graph.params())} params of {param_bytes} bytes)")
    return 0


def write_weights(params: dict, directory: Path, model: str | None = None) -> None:
    """Every param to DIR/<name>.npy. Nothing is written when one file would go through a
    link, over the model, or over a file that is not a .npy array (such as the model's
    external data, whose name an initializer may share)."""
    folder = output_directory(str(directory), "--weights")
    paths = [folder / f"{name}.npy" for name in params]
    checked_directory_files(paths, "--weights", [model] if model else [])
    for path in paths:
        if path.is_file() and not is_npy_file(path):
            raise RlxError(f"--weights: {path} exists and is not a .npy array (it may be the model's external "
                           "data); refusing to replace it", expected="an empty directory, or one rlxir wrote")
    for name, array in params.items():
        with atomic_output(folder / f"{name}.npy", binary=True) as handle:
            np.save(handle, np.ascontiguousarray(array))


def is_npy_file(path: Path) -> bool:
    """Whether `path` starts like a file numpy.save wrote."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(NPY_MAGIC)) == NPY_MAGIC
    except OSError:
        return False


__all__ = ["register", "run_import"]
