"""Every command answers hostile input with a result or an explained error: mutated example
graphs for check/print/opt/compile/run/grad, broken buffer lists for plan-csv. A crash is an
exception escaping the CLI, "internal error" or a traceback in its output."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from rlxir.testing.fuzz import fuzzed_commands, run_command, seed_texts, write_input

REPOSITORY = Path(__file__).resolve().parents[2]
COMMANDS = {command.name: command for command in fuzzed_commands(seed_texts(REPOSITORY))}
SETTINGS = settings(max_examples=20, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def test_every_command_of_the_issue_is_fuzzed():
    assert set(COMMANDS) - {"import"} == {"check", "print", "opt", "compile", "run", "grad", "plan-csv"}
    assert len(seed_texts(REPOSITORY)) > 20


@pytest.mark.parametrize("name", sorted(set(COMMANDS) - {"import"}))  # import: test_fuzz_import.py
def test_no_command_crashes_on_hostile_input(name):
    command = COMMANDS[name]

    @SETTINGS
    @given(text=command.inputs)
    def check(text):
        result = command.run_on(text)
        assert not result.crashed, f"rlxir {' '.join(result.arguments)} on:\n{text}\n---\n{result.output}"
        assert result.code in (0, 1, 2), result.output

    check()


def test_an_internal_error_counts_as_a_crash(tmp_path, monkeypatch):
    import rlxir.cli.run_commands as run_commands

    def broken(*args, **kwargs):
        raise TypeError("a defect")

    monkeypatch.setattr(run_commands, "interpret", broken)
    path = write_input(tmp_path, "g.rlx", "graph g {\n  input %x : f32[2]\n  output %x\n}\n")
    result = run_command(["run", str(path)])
    assert result.crashed and result.code == 3 and "internal error: TypeError: a defect" in result.output
    assert not run_command(["check", str(path)]).crashed


def test_a_pass_that_raises_counts_as_a_crash(tmp_path, monkeypatch):
    from rlxir.passes.dce import DeadCodeElimination

    def broken(self, graph, ctx):
        raise KeyError("x")

    monkeypatch.setattr(DeadCodeElimination, "run", broken)
    path = write_input(tmp_path, "g.rlx", "graph g {\n  input %x : f32[2]\n  output %x\n}\n")
    result = run_command(["opt", str(path), "--pipeline", "dce", "--reproducer-dir", str(tmp_path)])
    assert result.code == 1 and result.crashed, result.output
