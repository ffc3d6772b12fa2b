"""A broken module of the project fails the suite: nothing of rlxir is optional."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from rlxir.cli.main import build_parser
from rlxir.pass_machinery.pipeline import PipelineError, parse_pipeline
from rlxir.targets.target import get_target

TESTS = Path(__file__).resolve().parent
SKIPPING_AN_RLXIR_IMPORT = re.compile(r"importorskip\(\s*[\"']rlxir")


def test_a_command_module_that_fails_to_import_is_an_error(monkeypatch):
    import rlxir.cli

    # once imported, the module is an attribute of its package, which `from rlxir.cli import ...` reads first
    monkeypatch.delattr(rlxir.cli, "run_commands", raising=False)
    monkeypatch.setitem(sys.modules, "rlxir.cli.run_commands", None)  # importing it raises ImportError
    with pytest.raises(ImportError, match="run_commands"):
        build_parser()


def test_a_pipeline_naming_a_missing_pass_is_an_error():
    broken = get_target("cuda").pipeline + ",no-such-pass"
    with pytest.raises(PipelineError, match="no-such-pass"):
        parse_pipeline(broken)


def test_no_test_skips_when_a_module_of_rlxir_fails_to_import():
    offenders = [path.name for path in TESTS.rglob("*.py")
                 if path.name != Path(__file__).name and SKIPPING_AN_RLXIR_IMPORT.search(path.read_text())]
    assert offenders == []
