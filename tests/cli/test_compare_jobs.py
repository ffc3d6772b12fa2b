"""`rlxir compare --jobs N`: targets compiled in worker processes print what one process prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlxir.cli import main

ROOT = Path(__file__).resolve().parents[2]
GPT2_BLOCK = ROOT / "examples" / "gpt2_block.rlx"
MAMBA_BLOCK = ROOT / "examples" / "mamba_block.rlx"


def output(argv, capsys) -> tuple[int, str, str]:
    code = main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("extra", [[], ["--json"]])
@pytest.mark.parametrize("path", [GPT2_BLOCK, MAMBA_BLOCK])
def test_parallel_compare_is_byte_identical_to_the_serial_one(path, extra, capsys):
    base = ["compare", path, "--batch", "2", "--vram", "24GiB", "-D", "S=16", *extra]
    serial = output(base + ["--jobs", "1"], capsys)
    assert serial[0] == 0 and serial[1]
    assert output(base + ["--jobs", "3"], capsys) == serial
    assert output(base, capsys) == serial


def test_jobs_must_be_a_positive_integer(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["compare", str(GPT2_BLOCK), "--jobs", "0"])
    assert caught.value.code == 2
    assert "expected a positive integer" in capsys.readouterr().err


def test_a_bad_insertion_is_the_same_error_with_workers(capsys):
    base = ["compare", GPT2_BLOCK, "--batch", "2", "-D", "S=16", "--insert-after", "no-such-pass=dce"]
    assert output(base + ["--jobs", "2"], capsys) == output(base + ["--jobs", "1"], capsys)
