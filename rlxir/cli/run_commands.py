"""`rlxir run`: run a graph with the NumPy reference interpreter."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np

from rlxir.cli.options import add_input_options, load_graph
from rlxir.errors import RlxError
from rlxir.graph import Graph
from rlxir.interpreter import interpret
from rlxir.verifier import verify


def register(subparsers) -> None:
    run = subparsers.add_parser(
        "run", help="run a graph with the NumPy reference interpreter",
        description="Run a graph of FILE node by node with each op's NumPy reference and print a summary of every "
                    "output (shape, dtype, mean, min, max), or write each output to DIR/<name>.npy with -o. Inputs "
                    "and params come from .npy files (--input NAME=FILE); the rest are filled deterministically "
                    "from --seed. bf16 values are float32 arrays rounded to bf16 precision.",
        epilog="example: rlxir run examples/mlp.rlx --batch 2 --input x=x.npy -o out/")
    add_input_options(run)
    run.add_argument("--input", "-i", dest="feeds", metavar="NAME=FILE", action="append", type=named_file, default=[],
                     help="feed input or param NAME from the .npy FILE (repeatable); it must have the value's shape "
                          "and dtype (float32 for bf16)")
    run.add_argument("--seed", metavar="N", type=non_negative_int, default=0,
                     help="seed of the values not given with --input (default: 0)")
    run.add_argument("-o", "--output-dir", metavar="DIR", help="write each output to DIR/<name>.npy")
    run.set_defaults(run=run_graph)


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
    graph = load_graph(args)
    verify(graph)
    inputs, params = load_feeds(graph, args.feeds)
    results = interpret(graph, inputs, params, seed=args.seed)
    if args.output_dir:
        write_outputs(results, Path(args.output_dir), graph)
    else:
        for name, array in results.items():
            print(output_summary(name, array, graph))
    return 0


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


NPY_MAGIC = b"\x93NUMPY"


def read_array(path: str) -> np.ndarray:
    """The array in a .npy file; an unreadable or non-.npy file is an `RlxError`."""
    try:
        with open(path, "rb") as handle:
            if handle.read(len(NPY_MAGIC)) != NPY_MAGIC:
                raise RlxError(f"{path} is not a .npy file", expected="a file written by numpy.save")
            handle.seek(0)
            return np.load(handle, allow_pickle=False)
    except OSError as error:
        raise RlxError(f"cannot read {path}: {error.strerror or error}") from None
    except ValueError as error:
        raise RlxError(f"cannot read {path}: {error}", expected="a numeric .npy array") from None


def output_summary(name: str, array: np.ndarray, graph: Graph) -> str:
    """One line: ``%name  TYPE  mean .. min .. max ..`` (bools count as 0 and 1)."""
    head = f"%{name}  {type_text(name, array, graph)}"
    if array.size == 0:
        return f"{head}  (empty)"
    values = np.abs(array) if np.iscomplexobj(array) else array.astype(np.float64)
    return f"{head}  mean {np.mean(values):.6g}  min {np.min(values):.6g}  max {np.max(values):.6g}"


def type_text(name: str, array: np.ndarray, graph: Graph) -> str:
    """The IR type of an output as run, e.g. ``bf16[2, 6]`` (its dims are the array's)."""
    return f"{graph.type(name).dtype}[{', '.join(str(dim) for dim in array.shape)}]"


def write_outputs(results: dict[str, np.ndarray], directory: Path, graph: Graph) -> None:
    """Each output to DIR/<name>.npy (bf16 as float32), one line per file written."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for name, array in results.items():
            path = directory / f"{name}.npy"
            np.save(path, array)
            print(f"wrote {path}  {type_text(name, array, graph)}")
    except OSError as error:
        raise RlxError(f"cannot write to {directory}: {error.strerror or error}") from None


__all__ = ["register", "run_graph", "load_feeds", "output_summary"]
