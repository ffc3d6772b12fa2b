"""A command line that names a command imports only the module that adds it, and the
table that says which module that is stays true to what the modules register."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys

from rlxir.cli.main import _MODULES, COMMANDS, build_parser


def _registered(module_name: str) -> set[str]:
    parser = argparse.ArgumentParser()
    subparsers = parser.add_subparsers()
    importlib.import_module(f"rlxir.cli.{module_name}").register(subparsers)
    return set(subparsers.choices)


def test_every_command_is_listed_with_the_module_that_adds_it():
    for module_name in _MODULES:
        assert _registered(module_name) == {command for command, owner in COMMANDS.items() if owner == module_name}


def test_the_whole_parser_offers_every_command():
    parser = build_parser()
    subparsers = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    assert set(subparsers.choices) == set(COMMANDS)


def test_check_loads_neither_the_compiler_nor_the_executor(tmp_path):
    probe = ("import sys, json; from rlxir.cli.main import main; code = main(['check', 'examples/mlp.rlx']); "
             "print(json.dumps(sorted(name for name in sys.modules if name.startswith('rlxir.'))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "rlxir.ir.parser" in loaded and "rlxir.cli.ir_commands" in loaded
    for heavy in ("rlxir.compiler.compile", "rlxir.planning", "rlxir.executor", "rlxir.autodiff.backward",
                  "rlxir.cli.target_commands", "rlxir.interpreter"):
        assert heavy not in loaded, heavy


def test_a_misspelt_command_still_lists_every_command():
    done = subprocess.run([sys.executable, "-m", "rlxir", "chek", "x.rlx"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "invalid choice: 'chek'" in done.stderr and "plan-csv" in done.stderr
