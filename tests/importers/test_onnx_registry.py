"""The ONNX route's converters live in one table (`rlxir.importers.onnx_registry`) that the
converter modules fill and the route reads; the importer's ONNX modules import one way."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

pytest.importorskip("onnx")

IMPORTERS = Path(__file__).resolve().parents[2] / "rlxir" / "importers"


def onnx_import_graph() -> nx.DiGraph:
    """ONNX importer module -> ONNX importer module it imports (lazy imports count)."""
    modules = {path.stem: path for path in IMPORTERS.glob("onnx*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rlxir.importers"):
                targets = [node.module.rpartition(".")[2]]
                if node.module == "rlxir.importers":
                    targets = [alias.name for alias in node.names]
                for target in targets:
                    if target in modules and target != name:
                        graph.add_edge(name, target)
    return graph


def test_the_onnx_modules_import_each_other_without_a_circle():
    graph = onnx_import_graph()
    assert graph.has_edge("onnx", "onnx_registry") and graph.has_edge("onnx_nn", "onnx_ops")
    assert list(nx.simple_cycles(graph)) == []


def test_nothing_imports_the_route_back_and_the_table_imports_nothing():
    graph = onnx_import_graph()
    assert sorted(graph.predecessors("onnx")) == []
    assert sorted(graph.successors("onnx_registry")) == []


def test_every_converter_module_registers_into_the_one_table():
    from rlxir.importers import onnx  # noqa: F401  (imports every converter module)
    from rlxir.importers.onnx_registry import CONVERTERS

    modules = {converter.__module__.rpartition(".")[2] for converter in CONVERTERS.values()}
    converter_modules = {path.stem for path in IMPORTERS.glob("onnx_*.py") if "\nregister(" in path.read_text()}
    assert modules == converter_modules and len(modules) >= 7
    assert {"Conv", "Reshape", "If", "Einsum", "Resize"} <= set(CONVERTERS)


def test_a_second_converter_for_one_op_type_is_refused():
    from rlxir.importers import onnx  # noqa: F401
    from rlxir.importers.onnx_registry import CONVERTERS, register

    def another(ctx, node, attrs):
        return []

    with pytest.raises(ValueError, match="'Relu' has two converters"):
        register({"Relu": another})
    assert CONVERTERS["Relu"] is not another


def test_the_docs_list_exactly_the_op_types_the_table_converts():
    """docs/importers.md's "Supported op types" list is the table's default-domain op types,
    less those registered only to refuse with a reason (onnx_refused)."""
    import re

    from rlxir.importers import onnx  # noqa: F401
    from rlxir.importers.onnx_registry import CONVERTERS

    text = (IMPORTERS.parents[1] / "docs" / "importers.md").read_text()
    match = re.search(r"Supported op types \((\d+) of the default domain[^\n]*\n(.*?)\.\n", text, re.S)
    assert match, "docs/importers.md lists the supported ONNX op types"
    listed = {name.strip() for name in match.group(2).replace("\n", " ").split(",")}
    converted = {op for op, converter in CONVERTERS.items()
                 if "." not in op and not converter.__module__.endswith("onnx_refused")}
    assert listed == converted and int(match.group(1)) == len(converted)
