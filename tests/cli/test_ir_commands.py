"""`rlxir check`, `rlxir print`, `rlxir ops`: output, exit codes, diagnostics."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rlxir.cli import main

from in_process_cli import run, write_graph

MLP = """\
graph mlp(B, S=1) {
  input %x : f32[B, 784]
  param %w1 : f32[784, 512]
  param %b1 : f32[512]
  %h = linear(%x, %w1, %b1) : f32[B, 512]
  %p = softmax(%h)
  output %p
}
"""


@pytest.fixture
def mlp_file(tmp_path):
    return write_graph(tmp_path / "mlp.rlx", MLP)


def test_check_summarises_the_graph(mlp_file, capsys):
    code, out, err = run(["check", mlp_file], capsys)
    assert code == 0 and err == ""
    assert "graph mlp(B, S=1)" in out
    assert "linear x1" in out and "softmax x1" in out
    assert "1607680 B" in out  # (784*512 + 512) * 4


def test_check_json(mlp_file, capsys):
    code, out, _ = run(["check", mlp_file, "--batch", "4", "--json"], capsys)
    summary = json.loads(out)["graphs"][0]
    assert code == 0
    assert summary["symbols"] == {"S": 1}
    assert summary["inputs"] == {"x": "f32[4, 784]"}
    assert summary["param_bytes"] == (784 * 512 + 512) * 4


def test_print_binds_symbols(mlp_file, capsys):
    code, out, _ = run(["print", mlp_file, "-D", "B=3"], capsys)
    assert code == 0
    assert "graph mlp(S=1) {" in out
    assert "%p = softmax(%h) : f32[3, 512]" in out


def test_print_writes_a_file(mlp_file, tmp_path, capsys):
    target = tmp_path / "out.rlx"
    code, out, _ = run(["print", mlp_file, "-o", target], capsys)
    assert code == 0 and out == ""
    assert target.read_text().startswith("graph mlp(B, S=1) {")


def test_bad_input_is_one_located_diagnostic(tmp_path, capsys):
    bad = tmp_path / "bad.rlx"
    bad.write_text(MLP.replace("linear(%x, %w1, %b1)", "linaer(%x, %w1, %b1)"))
    code, out, err = run(["check", bad], capsys)
    assert code == 1 and out == ""
    assert err.startswith(f"{bad}:5:8: type error: unknown op 'linaer'")
    assert "^" in err and "did you mean linear" in err
    assert "Traceback" not in err


def test_unknown_symbol_binding_is_refused(mlp_file, capsys):
    code, _, err = run(["check", mlp_file, "-D", "Q=2"], capsys)
    assert code == 1
    assert "no graph declares symbol Q" in err


def test_missing_file_is_a_clean_error(tmp_path, capsys):
    code, _, err = run(["check", tmp_path / "nope.rlx"], capsys)
    assert code == 1
    assert "cannot read" in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [["check"], ["check", "x.rlx", "-D", "B"], ["print", "x.rlx", "--batch", "0"], ["frobnicate"]])
def test_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2


def test_ops_lists_every_core_op(capsys):
    code, out, _ = run(["ops", "--json"], capsys)
    names = {row["op"] for row in json.loads(out)}
    assert code == 0
    assert {"matmul", "selective_scan", "fused_elementwise", "conv2d"} <= names


def _console_script() -> str | None:
    beside_python = Path(sys.executable).parent / "rlxir"
    return str(beside_python) if beside_python.exists() else shutil.which("rlxir")


@pytest.mark.skipif(_console_script() is None, reason="the rlxir console script is not installed")
def test_console_script_help_for_every_command():
    for command in ("check", "print", "ops"):
        result = subprocess.run([_console_script(), command, "--help"], capture_output=True, text=True)
        assert result.returncode == 0
        assert "usage: rlxir " + command in result.stdout


MALFORMED = sorted((Path(__file__).resolve().parents[1] / "malformed").glob("*.rlx"))
EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.rlx"))


@pytest.mark.parametrize("path", MALFORMED, ids=[path.name for path in MALFORMED])
def test_check_on_malformed_input_prints_one_located_diagnostic(path, capsys):
    code, out, err = run(["check", path], capsys)
    first = path.read_text().splitlines()[0] if path.read_text() else ""
    assert code == 1 and out == ""
    assert err.startswith(f"{path}:"), err
    assert err.count(f"{path}:") == 1 and "Traceback" not in err
    if first.startswith("# ERROR "):
        assert err.startswith(f"{path}:{first.split()[2]}:")


@pytest.mark.parametrize("path", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_check_accepts_every_example(path, capsys):
    code, out, err = run(["check", path, "--batch", "2"], capsys)
    assert code == 0 and err == "" and "ok" in out
