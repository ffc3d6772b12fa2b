"""Shared by the hostile-input suite: run the CLI in-process and return (code, out, err)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlxir.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def cli(capsys):
    """Run ``rlxir ARGS``; a usage error (SystemExit) gives its code like any other exit."""

    def run(*args) -> tuple[int, str, str]:
        try:
            code = main([str(arg) for arg in args])
        except SystemExit as stop:
            code = stop.code
        captured = capsys.readouterr()
        assert "Traceback" not in captured.err and "internal error" not in captured.err, captured.err
        return code, captured.out, captured.err

    return run


@pytest.fixture
def mlp(tmp_path) -> Path:
    """A copy of examples/mlp.rlx that a test may try to overwrite."""
    path = tmp_path / "mlp.rlx"
    path.write_text((EXAMPLES / "mlp.rlx").read_text())
    return path
