"""The PyTorch importer's modules import each other without a circle: converter modules
register into `rlxir.importers.torch_registry`, and only the route module imports them all."""

from __future__ import annotations

import ast
from pathlib import Path

IMPORTERS = Path(__file__).resolve().parents[2] / "rlxir" / "importers"


def torch_imports() -> dict[str, set[str]]:
    """module name -> the ``rlxir.importers.torch*`` modules it imports (anywhere in the file)."""
    modules = {path.stem for path in IMPORTERS.glob("torch*.py")}
    graph = {}
    for name in modules:
        tree = ast.parse((IMPORTERS / f"{name}.py").read_text())
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "rlxir.importers":
                found |= {alias.name for alias in node.names if alias.name in modules}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rlxir.importers."):
                found.add(node.module.rsplit(".", 1)[1])
            elif isinstance(node, ast.Import):
                found |= {alias.name.rsplit(".", 1)[1] for alias in node.names
                          if alias.name.startswith("rlxir.importers.")}
        graph[name] = {module for module in found if module in modules and module != name}
    return graph


def cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle of `graph` ([] when there is none)."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(module: str) -> list[str]:
        state[module] = "open"
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        state[module] = "done"
        path.pop()
        return []

    for module in sorted(graph):
        if module not in state:
            found = visit(module)
            if found:
                return found
    return []


def test_the_torch_importer_modules_import_without_a_circle():
    graph = torch_imports()
    assert {"torch", "torch_registry", "torch_ops"} <= set(graph)
    assert cycle(graph) == []


def test_only_the_route_module_imports_the_route_module():
    graph = torch_imports()
    assert [module for module, targets in graph.items() if "torch" in targets] == []
    assert graph["torch_registry"] == set()


def test_the_cycle_check_finds_a_circle():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
