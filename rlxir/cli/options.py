"""Options shared by several commands: graph selection and symbol bindings; adding a command."""

from __future__ import annotations

import argparse
import inspect
import math
import re

from rlxir.cli import progress
from rlxir.dtypes import DTYPE_NAMES
from rlxir.errors import RlxError
from rlxir.ir.graph import Graph, Module
from rlxir.cli.model_inputs import load_model_module, load_model_weights


MAX_DIM = 2**63 - 1  # the largest dim a file may write; options bind no more than that
BATCH_SYMBOL = "B"  # the batch symbol unless --batch-dim names another


class UsageError(Exception):
    """A command-line mistake argparse cannot see (exit code 2)."""


def add_command(subparsers, name: str, run, help: str, **parser_options) -> argparse.ArgumentParser:
    """Add the subcommand NAME, carried out by RUN(args) -> exit code.

    Its --help description is RUN's docstring, so what the command does is written once,
    on the function that does it; HELP is the one line `rlxir --help` lists it with."""
    parser = subparsers.add_parser(name, help=help, description=inspect.getdoc(run), **parser_options)
    parser.set_defaults(run=run)
    return parser


def symbol_binding(text: str) -> tuple[str, int]:
    """argparse type for ``-D SYM=VALUE`` (ASCII digits, at most 2^63 - 1, like a file's dims)."""
    match = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*([0-9]+)\s*", text, re.ASCII)
    if match is None:
        raise argparse.ArgumentTypeError(f"expected SYM=VALUE with a non-negative integer value, got {_quoted(text)}")
    value = int(match.group(2))
    if value > MAX_DIM:
        raise argparse.ArgumentTypeError(f"{match.group(1)}={_short(match.group(2))} is past 2^63 - 1, "
                                         "the largest dim rlxir represents")
    return match.group(1), value


def positive_int(text: str) -> int:
    """argparse type for counts: ASCII digits only (no fullwidth digits, no underscores), 1..2^63 - 1."""
    if not re.fullmatch(r"\s*\+?[0-9]+\s*", text, re.ASCII):
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {_quoted(text)}")
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    if value > MAX_DIM:
        raise argparse.ArgumentTypeError(f"{_short(text.strip())} is past 2^63 - 1, the largest dim rlxir represents")
    return value


def _short(digits: str) -> str:
    return digits if len(digits) <= 24 else f"{digits[:10]}...({len(digits)} digits)"


def _quoted(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:60]) + "..."


def time_budget(text: str) -> float:
    """A --time-budget value: a finite number of seconds above zero (nan, inf and -1 are refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds as a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds above 0, got {text!r}")
    return value


def add_input_options(parser: argparse.ArgumentParser, batch: bool = True) -> None:
    """FILE, --graph, -D and --batch/--batch-dim."""
    parser.add_argument("file", metavar="FILE",
                        help="an .rlx file, an ONNX model, a torch.export program (.pt2) or a transformers "
                             "config.json (imported on the fly and cached; docs/cli.md)")
    parser.add_argument("--graph", metavar="NAME", help="the graph to use (default: the file's first graph)")
    parser.add_argument("--name", metavar="NAME",
                        help="an imported model's graph name (default: the model's own; as rlxir import --name)")
    parser.add_argument("-D", dest="define", metavar="SYM=VALUE", action="append", type=symbol_binding, default=[],
                        help="bind a symbol to an integer (repeatable), e.g. -D S=1024")
    if batch:
        parser.add_argument("--batch", metavar="N", type=positive_int,
                            help="bind the batch symbol (B, or the one --batch-dim names) to N")
        parser.add_argument("--batch-dim", metavar="SYM", default=BATCH_SYMBOL,
                            help=f"the batch symbol (default: {BATCH_SYMBOL})")


def bindings_from(args: argparse.Namespace) -> dict[str, int]:
    """The -D bindings plus --batch; one symbol given two different values is an error."""
    bindings: dict[str, int] = {}
    for symbol, value in args.define:
        if bindings.get(symbol, value) != value:
            raise RlxError(f"-D {symbol}={bindings[symbol]} and -D {symbol}={value} disagree",
                           expected=f"one value for {symbol}")
        bindings[symbol] = value
    batch = getattr(args, "batch", None)
    if batch is not None:
        if bindings.get(args.batch_dim, batch) != batch:
            raise RlxError(f"--batch {batch} and -D {args.batch_dim}={bindings[args.batch_dim]} disagree",
                           expected=f"one value for {args.batch_dim}: --batch N or -D {args.batch_dim}=N")
        bindings[args.batch_dim] = batch
    return bindings


NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*", re.ASCII)  # the grammar's NAME token


def checked_name(text: str | None, flag: str, dots: bool = True) -> None:
    """Refuse a --name/--batch-dim the text could not carry (a dtype name is not a symbol)."""
    if text is None:
        return
    if not NAME.fullmatch(text) or (not dots and "." in text) or text in DTYPE_NAMES:
        reason = "a dtype name" if text in DTYPE_NAMES else "not a name"
        raise RlxError(f"{flag} {text!r} is {reason}",
                       expected="a letter or _ followed by letters, digits or _ (not f32, i64, ...), e.g. B")


def load_module(args: argparse.Namespace) -> Module:
    """FILE's module: rlx text parsed, a model imported with the import options (or read from
    the import cache); `rlxir.cli.model_inputs` decides which by the file's content."""
    batch_dim = getattr(args, "batch_dim", BATCH_SYMBOL)
    checked_name(batch_dim, "--batch-dim", dots=False)
    checked_name(getattr(args, "name", None), "--name")
    return load_model_module(args.file, batch_dim, getattr(args, "name", None), getattr(args, "training", False))


def model_weights(args: argparse.Namespace) -> dict:
    """The weights FILE carries when it is an ONNX model or a .pt2 program (else none)."""
    return load_model_weights(args.file, getattr(args, "batch_dim", BATCH_SYMBOL), getattr(args, "name", None))


def selected_graphs(module: Module, args: argparse.Namespace) -> list[Graph]:
    return [module[args.graph]] if args.graph else list(module)


def bind_graphs(graphs: list[Graph], bindings: dict[str, int]) -> list[Graph]:
    """Bind each graph to the symbols it declares; a symbol no graph declares is an error."""
    declared = set().union(*(graph.symbols for graph in graphs)) if graphs else set()
    unknown = sorted(set(bindings) - declared)
    if unknown:
        names = ", ".join(sorted(declared)) or "none"
        raise RlxError(f"no graph declares symbol {', '.join(unknown)}", expected=f"one of the declared symbols: {names}")
    return [graph.bind({k: v for k, v in bindings.items() if k in graph.symbols}) if bindings else graph
            for graph in graphs]


def read_graph(args: argparse.Namespace) -> Graph:
    """The one graph a command works on, as written (unbound), with a progress line while
    the file is parsed."""
    progress.show(f"parsing {args.file} ...")
    module = load_module(args)
    progress.clear()
    return module[args.graph] if args.graph else module.main


def load_graph(args: argparse.Namespace) -> Graph:
    """The one graph a command works on, bound as the options say."""
    module = load_module(args)
    graph = module[args.graph] if args.graph else module.main
    return bind_graphs([graph], bindings_from(args))[0]
