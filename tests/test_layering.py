"""The package's layers point one way, read from the import statements themselves (ast).

Every module of rlxir/ belongs to one layer (`LAYERS`, bottom first); a module imports
only from its own package or from a layer below its own, so there is no circle anywhere in
the package, and a reader can take the packages in order:

    base (errors, types, dtypes, symbolic, gcpause, numpy_on_use)
    ops/  planning/  targets/        side by side: none imports another
    ir/                              the language and the graph
    pass_machinery/  importers/      side by side
    compiler/                        compile and fit
    autodiff/                        the backward graph and training
    interpreter                      the NumPy reference run
    executor/                        graphs run in their arenas
    the public API (rlxir/__init__.py, module_api.py)
    cli/
    testing/, __main__

Imports inside functions and under ``TYPE_CHECKING`` count: a lazy import is still a
dependency. ``from rlxir.cli import progress`` names the submodule, not the package.
`rlxir.passes` and `rlxir.backends` (passes/ and backends/, beside rlxir/) are found by
the registries by name and are not part of the walk. Also here: at most 12 modules stand
directly in rlxir/, and no module is over 600 lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rlxir"
CLI = PACKAGE / "cli"

BASE = ("rlxir.errors", "rlxir.types", "rlxir.dtypes", "rlxir.symbolic", "rlxir.gcpause", "rlxir.numpy_on_use")
LAYERS = {
    "base": 0,
    "rlxir.ops": 1, "rlxir.planning": 1, "rlxir.targets": 1,
    "rlxir.ir": 2,
    "rlxir.pass_machinery": 3, "rlxir.importers": 3,
    "rlxir.compiler": 4,
    "rlxir.autodiff": 5,
    "rlxir.interpreter": 6,
    "rlxir.executor": 7,
    "api": 8,
    "rlxir.cli": 9,
    "rlxir.testing": 10, "rlxir.__main__": 10,
}
"""Layer rank of each package (a module's package: its first two name parts, or `base`,
or `api` for the package's own __init__ and module_api). Equal ranks sit side by side."""
API = ("rlxir", "rlxir.module_api")
BESIDE = ("rlxir.passes", "rlxir.backends")
MAX_TOP_LEVEL_MODULES = 12
MAX_LINES = 600


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


def package_of(module: str) -> str:
    """The layer key of `module` (see `LAYERS`)."""
    if module in API:
        return "api"
    if module in BASE:
        return "base"
    return ".".join(module.split(".")[:2])


def import_graph(root: Path = PACKAGE) -> nx.DiGraph:
    """Module -> rlxir module it imports, each edge with the file and line of the import."""
    modules = {module_name(path): path for path in sorted(root.rglob("*.py"))}
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        for module, imported, line in imports_of(path):
            target = f"{module}.{imported}" if f"{module}.{imported}" in modules else module
            if target.startswith(BESIDE):
                continue
            while target and target not in modules:  # a name imported from a module
                target = target.rpartition(".")[0]
            if target and target != name:
                graph.add_edge(name, target, where=f"{path.relative_to(ROOT)}:{line}")
    return graph


def where(graph: nx.DiGraph, source: str, target: str) -> str:
    return f"{graph.edges[source, target]['where']}: {source} imports {target}"


def test_the_walk_sees_the_imports():
    graph = import_graph()
    assert graph.number_of_edges() > 300
    assert graph.has_edge("rlxir.cli.target_commands", "rlxir.cli.training_commands")
    assert graph.has_edge("rlxir.compiler.fit", "rlxir.compiler.compile")


def test_no_circle_anywhere_in_the_package():
    graph = import_graph()
    circles = []
    for component in nx.strongly_connected_components(graph):
        if len(component) > 1:
            cycle = nx.find_cycle(graph.subgraph(component))
            circles.append(" -> ".join(source for source, _ in cycle) + "\n    "
                           + "\n    ".join(where(graph, source, target) for source, target in cycle))
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_every_module_has_a_layer():
    unplaced = sorted(module for module in import_graph() if package_of(module) not in LAYERS)
    assert unplaced == [], f"modules in no layer (add their package to LAYERS): {unplaced}"


def test_every_import_points_down():
    graph = import_graph()
    upward = []
    for source, target in graph.edges:
        here, there = package_of(source), package_of(target)
        if here != there and LAYERS.get(there, 99) >= LAYERS.get(here, -1):
            upward.append(f"{where(graph, source, target)} ({here} is layer {LAYERS.get(here)}, "
                          f"{there} layer {LAYERS.get(there)})")
    assert upward == [], "imports that do not point down:\n" + "\n".join(upward)


def test_few_modules_directly_in_the_package():
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, f"{len(top)} modules directly in rlxir/: {top}"


def test_no_module_over_600_lines():
    long = []
    for folder in (PACKAGE, ROOT / "passes", ROOT / "backends"):
        for path in sorted(folder.rglob("*.py")):
            lines = len(path.read_text().splitlines())
            if lines > MAX_LINES:
                long.append(f"{path.relative_to(ROOT)}: {lines} lines")
    assert long == [], f"modules over {MAX_LINES} lines:\n" + "\n".join(long)


def test_the_command_modules_never_import_main():
    graph = import_graph(CLI)
    importers = sorted(source for source, target in graph.edges if target == "rlxir.cli.main")
    assert importers == ["rlxir.cli"]


def test_no_cli_module_imports_a_private_name_of_another_module():
    offenders = []
    for path in sorted(CLI.glob("*.py")):
        for module, imported, line in imports_of(path):
            private = imported.startswith("_") and not imported.endswith("__")  # __version__ is public
            if module.startswith("rlxir") and module != module_name(path) and private:
                offenders.append(f"{path.name}:{line}: {imported} from {module}")
    assert offenders == []


@pytest.mark.parametrize("source, expected", [
    ("from rlxir.cli.main import UsageError\n", [("rlxir.cli.main", "UsageError", 1)]),
    ("def f():\n    from . import progress\n", [("rlxir.cli", "progress", 2)]),
    ("import rlxir.ir.parser as p\n", [("rlxir.ir.parser", "", 1)]),
    ("from ..ops import chain\n", [("rlxir.ops", "chain", 1)]),
])
def test_the_walk_finds_every_kind_of_import(source, expected):
    assert imports_in(source, "rlxir.cli") == expected
