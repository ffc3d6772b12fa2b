"""`rlxir` run in this process, as the CLI tests drive it."""

from __future__ import annotations

from pathlib import Path

from rlxir.cli import main


def run(argv, capsys) -> tuple[int, str, str]:
    """Run ``rlxir ARGV`` (paths become strings); return the exit code, stdout and stderr."""
    code = main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write_graph(path: Path, text: str) -> Path:
    """Write rlx TEXT to PATH for a test to hand to the CLI; return PATH."""
    path.write_text(text)
    return path
