"""The pass registry: names, duplicates, built-ins found lazily, plugins."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from rlxir.pass_machinery import pass_base
from rlxir.pass_machinery.pass_base import Pass, available_passes, get_pass, load_plugin, register_pass
from rlxir.errors import RlxError

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "examples" / "plugin"


def test_builtin_passes_are_found_by_name():
    assert get_pass("dce").__module__ == "rlxir.passes.dce"
    assert "cse" in available_passes()
    assert get_pass("no-such-pass") is None


@pytest.mark.parametrize(
    "pass_name, refusal",
    [("Bad_Name", "kebab-case"), ("dce", "already registered")],
    ids=["names-must-be-kebab-case", "duplicate-names-are-refused"],
)
def test_bad_pass_names_are_refused(pass_name, refusal):
    @attrs.frozen
    class Candidate(Pass):
        name = pass_name

        def run(self, graph, ctx):
            return False

    with pytest.raises(ValueError, match=refusal):
        register_pass(Candidate)


def test_every_pass_documents_itself_and_its_options():
    for name, cls in available_passes().items():
        assert cls.summary(), f"pass {name} has no docstring"
        for field in cls.option_fields():
            assert field.metadata.get("doc"), f"option {field.name} of {name} has no doc"


def test_plugin_module_registers_its_pass(monkeypatch):
    # A fresh registry and module cache: another test may have loaded the plugin already.
    monkeypatch.setattr(pass_base, "_PASSES", {name: cls for name, cls in pass_base._PASSES.items()
                                               if name != "mul-by-two-to-add"})
    # The module this test imports registered into the registry put back afterwards, so it
    # is taken out of the module cache too: a later --plugin rlxir_strength imports it again.
    monkeypatch.setitem(sys.modules, "rlxir_strength", None)
    del sys.modules["rlxir_strength"]
    monkeypatch.syspath_prepend(str(PLUGIN / "src"))
    assert get_pass("mul-by-two-to-add") is None
    assert load_plugin("rlxir_strength") == ["mul-by-two-to-add"]
    assert get_pass("mul-by-two-to-add").__module__ == "rlxir_strength"


def test_unloadable_plugin_is_a_clean_error():
    with pytest.raises(RlxError, match="cannot load plugin"):
        load_plugin("rlxir_no_such_plugin_module")


def test_installed_plugin_is_found_through_its_entry_point(tmp_path):
    target = tmp_path / "site"
    # built from a copy: an in-tree build leaves src/*.egg-info, whose entry point every
    # later test that puts the plugin's src on sys.path would then see
    source = shutil.copytree(PLUGIN, tmp_path / "plugin", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(target),
         str(source)], capture_output=True, text=True)
    if install.returncode != 0 and "No module named" in install.stderr:
        pytest.skip(f"cannot build the plugin here: {install.stderr[-200:]}")
    assert install.returncode == 0, install.stderr
    env = {**os.environ, "PYTHONPATH": str(target)}
    listed = subprocess.run([sys.executable, "-m", "rlxir.cli.main", "passes"], capture_output=True, text=True, env=env)
    assert listed.returncode == 0, listed.stderr
    assert "mul-by-two-to-add" in listed.stdout
    graph = tmp_path / "g.rlx"
    graph.write_text("graph g {\n  input %x : f32[4]\n  const %two : f32[] = 2.0\n  %y = mul(%two, %x)\n  output %y\n}\n")
    run = subprocess.run([sys.executable, "-m", "rlxir.cli.main", "opt", str(graph), "-p", "mul-by-two-to-add,dce"],
                         capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert "%y = add(%x, %x) : f32[4]" in run.stdout  # the output keeps its name


class _FakeEntry:
    """An ``rlxir.passes`` entry point as importlib.metadata gives it."""

    def __init__(self, name: str, load):
        self.name, self.value, self._load = name, f"fake_plugin:{name}", load

    def load(self):
        return self._load()


def test_a_broken_or_clashing_entry_point_is_reported_not_skipped_in_silence(monkeypatch, capsys):
    from rlxir.cli import main

    class SecondDce(Pass):
        name = "dce"

        def run(self, graph, ctx):
            return False

    class Fresh(Pass):
        """a pass that only an entry point provides"""
        name = "fresh-from-entry-point"

        def run(self, graph, ctx):
            return False

    def broken():
        raise ImportError("No module named 'fake_plugin_dependency'")

    entries = [_FakeEntry("broken", broken), _FakeEntry("not-a-pass", lambda: len),
               _FakeEntry("dce", lambda: SecondDce), _FakeEntry("fresh", lambda: Fresh)]
    monkeypatch.setattr(pass_base.metadata, "entry_points", lambda group: entries)
    monkeypatch.setitem(pass_base._SCANNED, "entry_points", False)
    monkeypatch.setattr(pass_base, "_PROBLEMS", [])
    monkeypatch.setattr(pass_base, "_PASSES", dict(pass_base._PASSES))
    assert get_pass("fresh-from-entry-point") is Fresh
    assert get_pass("dce") is not SecondDce  # the built-in keeps its name
    problems = pass_base.entry_point_problems()
    assert len(problems) == 3
    assert "broken = fake_plugin:broken failed while loading: ImportError" in problems[0]
    assert "not a Pass subclass" in problems[1]
    assert "'dce' is already registered by rlxir.passes.dce" in problems[2]
    assert main(["passes"]) == 0
    err = capsys.readouterr().err
    assert err.count("rlxir passes: warning: entry point") == 3
    with pytest.raises(RlxError, match="unknown pass 'nope'[^$]*note: entry point broken"):
        pass_base.make_pass("nope")
