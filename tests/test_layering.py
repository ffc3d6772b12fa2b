"""The package's layers point one way, read from the import statements themselves (ast):

- no circle between the CLI's modules (a command module imports shared modules, never the
  other way round, and nothing imports `main` back);
- a CLI module imports no `_private` name of another rlxir module;
- the op layer (rlxir/ops/) does not import the Lark front end (rlxir/ir/parser.py).

Imports inside functions count: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "rlxir"
CLI = PACKAGE / "cli"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> list[tuple[str, str, int]]:
    """(module, imported name or "", line) for every import statement in `path`."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    return imports_in(path.read_text(), package)


def imports_in(source: str, package: str) -> list[tuple[str, str, int]]:
    """The imports of `source`, relative ones resolved against `package`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((alias.name, "", node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module or "") if part)
            found.extend((module, alias.name, node.lineno) for alias in node.names)
    return found


def cli_import_graph() -> nx.DiGraph:
    """CLI module -> CLI module it imports (``from rlxir.cli import progress`` names the
    submodule, not the package)."""
    modules = {module_name(path): path for path in CLI.glob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        for module, imported, _ in imports_of(path):
            target = f"{module}.{imported}" if f"{module}.{imported}" in modules else module
            if target in modules and target != name:
                graph.add_edge(name, target)
    return graph


def test_the_cli_modules_import_each_other_without_a_circle():
    graph = cli_import_graph()
    assert graph.number_of_edges() >= 10  # the walk sees the imports at all
    assert graph.has_edge("rlxir.cli.target_commands", "rlxir.cli.training_commands")
    cycles = list(nx.simple_cycles(graph))
    assert cycles == [], f"circles between CLI modules: {cycles}"


def test_the_command_modules_never_import_main():
    importers = sorted(source for source, target in cli_import_graph().edges if target == "rlxir.cli.main")
    assert importers == ["rlxir.cli"]


def test_no_cli_module_imports_a_private_name_of_another_module():
    offenders = []
    for path in sorted(CLI.glob("*.py")):
        for module, imported, line in imports_of(path):
            private = imported.startswith("_") and not imported.endswith("__")  # __version__ is public
            if module.startswith("rlxir") and module != module_name(path) and private:
                offenders.append(f"{path.name}:{line}: {imported} from {module}")
    assert offenders == []


def test_the_op_layer_does_not_import_the_parser():
    offenders = []
    for path in sorted((PACKAGE / "ops").rglob("*.py")):
        for module, imported, line in imports_of(path):
            if module == "rlxir.ir.parser" or (module, imported) == ("rlxir", "parser"):
                offenders.append(f"{path.relative_to(PACKAGE)}:{line}")
    assert offenders == []


@pytest.mark.parametrize("source, expected", [
    ("from rlxir.cli.main import UsageError\n", [("rlxir.cli.main", "UsageError", 1)]),
    ("def f():\n    from . import progress\n", [("rlxir.cli", "progress", 2)]),
    ("import rlxir.ir.parser as p\n", [("rlxir.ir.parser", "", 1)]),
    ("from ..ops import chain\n", [("rlxir.ops", "chain", 1)]),
])
def test_the_walk_finds_every_kind_of_import(source, expected):
    assert imports_in(source, "rlxir.cli") == expected
