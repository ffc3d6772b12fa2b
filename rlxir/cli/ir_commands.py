"""`rlxir check`, `rlxir print` and `rlxir ops`: reading, checking and writing IR."""

from __future__ import annotations

import argparse
import json
from collections import Counter

from rlxir.cli.options import add_command, add_input_options, bind_graphs, bindings_from, load_module, selected_graphs
from rlxir.cli.output_files import add_output_option, checked_output_file, print_or_write
from rlxir.ir.graph import Graph
from rlxir.ops import registered_ops
from rlxir.ir.printer import print_graph
from rlxir.symbolic import Expr
from rlxir.ir.verifier import verify


def register(subparsers) -> None:
    check = add_command(subparsers, "check", run_check, "parse and verify a file; summarise its graphs")
    add_input_options(check)
    check.add_argument("--json", action="store_true", help="print the summary as JSON")

    printer = add_command(subparsers, "print", run_print, "print a file in canonical form")
    add_input_options(printer)
    add_output_option(printer, "the text")

    ops = add_command(subparsers, "ops", run_ops, "list the registered ops")
    ops.add_argument("--json", action="store_true", help="print as JSON")


def _graphs(args: argparse.Namespace) -> list[Graph]:
    module = load_module(args)
    graphs = bind_graphs(selected_graphs(module, args), bindings_from(args))
    for graph in graphs:
        verify(graph)
    return graphs


def graph_summary(graph: Graph) -> dict:
    """What `rlxir check` reports about one graph (one walk over its nodes)."""
    histogram: Counter = Counter()
    inputs, params = [], []
    for name in graph.schedule():
        op = graph.op(name)
        if op == "input":
            inputs.append(name)
        elif op == "param":
            params.append(name)
        elif op != "const":
            histogram[op] += 1
    param_bytes: int | str = 0
    for name in params:
        numel = graph.type(name).numel
        if isinstance(numel, Expr) or isinstance(param_bytes, str):
            param_bytes = "symbolic"
            continue
        param_bytes += numel * graph.type(name).dtype.itemsize
    return {
        "graph": graph.name,
        "symbols": {name: default for name, default in graph.symbols.items()},
        "nodes": len(graph),
        "ops": sum(histogram.values()),
        "inputs": {name: str(graph.type(name)) for name in inputs},
        "params": len(params),
        "param_bytes": param_bytes,
        "outputs": {name: str(graph.type(name)) for name in graph.outputs},
        "op_histogram": dict(sorted(histogram.items(), key=lambda item: (-item[1], item[0]))),
    }


def _human_bytes(count) -> str:
    if not isinstance(count, int):
        return str(count)
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{count} B" if unit == "B" else f"{count} B ({value:.2f} {unit})"
        value /= 1024
    return f"{count} B"


def run_check(args: argparse.Namespace) -> int:
    """Parse FILE, verify every graph (SSA, types, attributes, one output) and print, per graph: its
    symbols, node count, op histogram and parameter bytes. With -D/--batch the graphs are
    specialised first, so checks that need numbers (slice bounds, reshape counts) run too. Exit 0
    when valid, 1 with one located diagnostic when not."""
    summaries = [graph_summary(graph) for graph in _graphs(args)]
    if args.json:
        print(json.dumps({"file": args.file, "valid": True, "graphs": summaries}, indent=2))
        return 0
    print(f"{args.file}: ok, {len(summaries)} graph{'s' if len(summaries) != 1 else ''}")
    for summary in summaries:
        symbols = ", ".join(name if value is None else f"{name}={value}" for name, value in summary["symbols"].items())
        print(f"\ngraph {summary['graph']}({symbols})")
        print(f"  nodes        {summary['nodes']} ({summary['ops']} ops, {summary['params']} params)")
        print(f"  param bytes  {_human_bytes(summary['param_bytes'])}")
        for name, type_text in summary["inputs"].items():
            print(f"  input        %{name} : {type_text}")
        for name, type_text in summary["outputs"].items():
            print(f"  output       %{name} : {type_text}")
        print("  ops          " + ", ".join(f"{op} x{count}" for op, count in summary["op_histogram"].items()))
    return 0


def run_print(args: argparse.Namespace) -> int:
    """Parse FILE and print it in canonical form (always with result types). With -D/--batch the
    printed graphs are specialised: bound symbols are replaced by their values."""
    if args.output:
        checked_output_file(args.output, "-o", [args.file], args.in_place)
    print_or_write(args.output, "\n".join(print_graph(graph) for graph in _graphs(args)))
    return 0


def run_ops(args: argparse.Namespace) -> int:
    """List every registered op: arity, attributes with defaults, traits."""
    from rlxir.ops.registry import format_attr_value

    rows = []
    for name, opdef in sorted(registered_ops().items()):
        attributes = {
            key: ("required" if spec.required else format_attr_value(spec.default)) for key, spec in opdef.attributes.items()
        }
        rows.append({"op": name, "arity": opdef.arity_text(), "attributes": attributes,
                     "traits": sorted(opdef.traits), "doc": opdef.doc})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        attrs = ", ".join(f"{key}={value}" for key, value in row["attributes"].items())
        print(f"{row['op']:<26} {row['arity']:<22} {', '.join(row['traits']):<28} {attrs}")
    return 0


__all__ = ["register", "graph_summary"]
