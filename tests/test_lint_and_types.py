"""The linter and the type checker as part of the suite (so CI runs them): `ruff check`
over the package, passes, backends, tests and benchmarks, and `mypy` over the modules
that define the public API, both configured in pyproject.toml; and every name `rlxir`
exports annotated in full, checked by inspection."""

from __future__ import annotations

import inspect
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import attrs

import rlxir
from rlxir.pass_machinery.pass_base import Pass, PassContext

ROOT = Path(__file__).resolve().parents[1]
LINTED = ("rlxir", "passes", "backends", "tests", "bench")


def _tool(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def test_ruff_reports_nothing() -> None:
    done = _tool("ruff", "check", "--no-cache", *LINTED)
    assert done.returncode == 0, f"ruff check {' '.join(LINTED)} failed:\n{done.stdout}{done.stderr}"


def test_mypy_reports_nothing_on_the_public_api_modules() -> None:
    done = _tool("mypy")  # the files and the strictness come from [tool.mypy]
    assert done.returncode == 0, f"mypy failed:\n{done.stdout}{done.stderr}"


def test_mypy_settings_refuse_an_unannotated_function(tmp_path: Path) -> None:
    # The same settings on a module of one unannotated and one annotated function: only
    # the first is reported, so a public function added without types fails the suite.
    module = tmp_path / "sample.py"
    module.write_text("def scale(value, factor=2):\n    return value * factor\n\n\n"
                      "def scaled(value: int, factor: int = 2) -> int:\n    return value * factor\n")
    done = _tool("mypy", "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(ROOT / ".mypy_cache"),
                 str(module), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    reported = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert len(reported) == 1 and "sample.py:1:" in reported[0] and "no-untyped-def" in reported[0], done.stdout


def _unannotated(function: Callable, where: str) -> list[str]:
    """The parameters and return of `function` that carry no annotation, as `where.name`."""
    signature = inspect.signature(function)
    missing = [f"{where}: parameter {name}" for name, parameter in signature.parameters.items()
               if name not in ("self", "cls") and parameter.annotation is inspect.Parameter.empty]
    if signature.return_annotation is inspect.Signature.empty and function.__name__ != "__init__":
        missing.append(f"{where}: return")
    return missing


def _generated_by_attrs(function: Callable) -> bool:
    return function.__code__.co_filename.startswith("<attrs generated")


def _class_gaps(cls: type, where: str) -> list[str]:
    """Unannotated fields of an attrs class, and unannotated methods and properties it defines."""
    gaps = [f"{where}.{field.name}: field" for field in attrs.fields(cls) if field.type is None] if attrs.has(cls) else []
    for name, member in vars(cls).items():
        if name.startswith("_") and name != "__init__":
            continue
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if isinstance(member, property):
            member = member.fget
        if inspect.isfunction(member) and not _generated_by_attrs(member):
            gaps += _unannotated(member, f"{where}.{name}")
    return gaps


def test_every_export_and_the_pass_context_are_annotated() -> None:
    exported = {name: getattr(rlxir, name) for name in rlxir.__all__}
    exported.update({"pass_base.PassContext": PassContext, "pass_base.Pass": Pass})
    gaps = []
    for name, value in exported.items():
        if inspect.isclass(value):
            gaps += _class_gaps(value, name)
        elif inspect.isfunction(value):
            gaps += _unannotated(value, name)
    assert not gaps, "unannotated parts of the public API:\n" + "\n".join(gaps)


def test_the_annotation_check_sees_a_gap() -> None:
    def partly(value: int, factor=2):  # the gap under test
        return value * factor

    @attrs.frozen
    class Loose:
        size = attrs.field()

        def grow(self, by: int) -> None:
            """Annotated in full: not a gap."""

    assert _unannotated(partly, "partly") == ["partly: parameter factor", "partly: return"]
    assert _class_gaps(Loose, "Loose") == ["Loose.size: field"]
