"""The distribution's layout: `passes/` and `backends/` install under `rlxir`, the grammar ships."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# What the build reads. The wheel is built from a copy of these, so the build's own
# build/ and egg-info folders never land in the checkout (nor collide between workers).
SOURCES = ["pyproject.toml", "README.md", "rlxir", "grammar", "passes", "backends"]


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory) -> set[str]:
    out, source = tmp_path_factory.mktemp("wheel"), tmp_path_factory.mktemp("source")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(ROOT / name, source / name)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
        capture_output=True, text=True,
    )
    if result.returncode != 0 and "No module named" in result.stderr:
        pytest.skip(f"cannot build a wheel here: {result.stderr.strip()[-200:]}")
    assert result.returncode == 0, result.stderr
    (wheel,) = out.glob("rlxir-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def test_passes_and_backends_install_under_rlxir(wheel_names):
    assert "rlxir/passes/__init__.py" in wheel_names
    assert "rlxir/backends/__init__.py" in wheel_names
    top_levels = {name.split("/")[0] for name in wheel_names if "/" in name and ".dist-info" not in name}
    assert top_levels == {"rlxir"}


def test_every_module_of_the_package_ships(wheel_names):
    root = Path(__file__).resolve().parents[1]
    modules = {path.relative_to(root).as_posix() for path in (root / "rlxir").rglob("*.py")}
    assert modules <= wheel_names, sorted(modules - wheel_names)


def test_grammar_ships_as_package_data(wheel_names):
    assert "rlxir/grammar/rlx.lark" in wheel_names


def test_plan_page_template_ships_as_package_data(wheel_names):
    assert {"rlxir/cli/plan_page.html", "rlxir/cli/plan_page.js"} <= wheel_names


def test_console_script_is_declared(wheel_names):
    entry_points = [name for name in wheel_names if name.endswith("entry_points.txt")]
    assert entry_points


def test_installed_version_matches_cli():
    result = subprocess.run([sys.executable, "-m", "rlxir.cli.main", "--version"], capture_output=True, text=True)
    import rlxir

    assert result.stdout.strip() == f"rlxir {rlxir.__version__}"
