"""Every example graph through every command that reads a graph, against committed outputs.

For each ``examples/*.rlx`` the commands below run in this process (B=2, S=16 where the
graph declares S, a fixed --vram so no device is probed) and their exit codes and outputs,
joined, must equal ``tests/golden/cli/<name>.txt`` byte for byte. The goldens pin what the
CLI says, so a change that moves code around without meaning to change behaviour shows up
here first. ``RLXIR_UPDATE_GOLDEN=1`` rewrites them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from rlxir.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.rlx"))
GOLDEN = Path(__file__).parent / "cli"
TARGETS = ("cpu", "cuda", "gpu", "metal", "rocm", "vulkan")
VRAM = ["--vram", "8000000000"]


def commands(path: Path) -> list[list[str]]:
    """The command lines one example runs through."""
    binds = ["-D", "B=2"] + (["-D", "S=16"] if re.search(r"\bS\b", path.read_text().partition("{")[0]) else [])
    lines = [["check", str(path)], ["targets"]]
    lines += [["compile", str(path), "-t", target, *binds, *VRAM] for target in TARGETS]
    lines += [["fit", str(path), "-t", target, *binds[2:], "--max-batch", "4", "--jobs", "1", *VRAM]
              for target in ("cpu", "rocm")]
    lines += [["compare", str(path), *binds, "--jobs", "1", *VRAM], ["plan", str(path), *binds, "-t", "cuda"],
              ["opt", str(path), *binds, "--pipeline", "dce,cse"], ["grad", str(path), *binds],
              ["run", str(path), *binds, "--seed", "0"]]
    return lines


def transcript(path: Path, capsys) -> str:
    """Every command's exit code, stdout and stderr, file paths made relative to the repo."""
    parts = []
    for argv in commands(path):
        code = main(argv)
        captured = capsys.readouterr()
        shown = " ".join(arg.replace(str(ROOT) + os.sep, "") for arg in argv)
        parts.append(f"$ rlxir {shown}\nexit {code}\n{captured.out}{captured.err}")
    return "\n".join(parts).replace(str(ROOT) + os.sep, "")


@pytest.mark.parametrize("path", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_every_command_says_what_it_said_before(path, capsys):
    got = transcript(path, capsys)
    golden = GOLDEN / f"{path.stem}.txt"
    if os.environ.get("RLXIR_UPDATE_GOLDEN"):
        golden.write_text(got)
    assert got == golden.read_text()
