"""`rlxir run`: summaries, .npy outputs, fed inputs, exit codes and diagnostics."""

from __future__ import annotations

import numpy as np
import pytest

from rlxir.cli import main

from in_process_cli import run, write_graph

GRAPH = """\
graph mlp(B, S=1) {
  input %x : f32[B, 4]
  param %w : f32[4, 3]
  input %ids : i32[B]
  param %table : bf16[5, 3]
  %h = matmul(%x, %w)
  %e = gather(%table, %ids)
  %p = softmax(%h)
  output %p, %e
}
"""


@pytest.fixture
def graph_file(tmp_path):
    return write_graph(tmp_path / "mlp.rlx", GRAPH)


def test_prints_a_summary_per_output(graph_file, capsys):
    code, out, err = run(["run", graph_file, "--batch", "2"], capsys)
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("%p  f32[2, 3]  mean 0.333333  min ")
    assert lines[1].startswith("%e  bf16[2, 3]  mean ")


def test_writes_outputs_from_fed_inputs(graph_file, tmp_path, capsys):
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    w = np.eye(4, 3, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    out_dir = tmp_path / "out"
    code, out, _ = run(["run", graph_file, "-D", "B=2", "--input", f"x={tmp_path / 'x.npy'}",
                        "-i", f"%w={tmp_path / 'w.npy'}", "-o", out_dir], capsys)
    assert code == 0
    assert f"wrote {out_dir / 'p.npy'}  f32[2, 3]" in out
    h = x @ w
    expected = np.exp(h - h.max(-1, keepdims=True))
    np.testing.assert_allclose(np.load(out_dir / "p.npy"), expected / expected.sum(-1, keepdims=True), rtol=1e-6)
    embedded = np.load(out_dir / "e.npy")
    assert embedded.dtype == np.float32 and embedded.shape == (2, 3)


def test_the_seed_changes_the_filled_values(graph_file, capsys):
    _, first, _ = run(["run", graph_file, "--batch", "2", "--seed", "1"], capsys)
    _, again, _ = run(["run", graph_file, "--batch", "2", "--seed", "1"], capsys)
    _, other, _ = run(["run", graph_file, "--batch", "2", "--seed", "2"], capsys)
    assert first == again and first != other


def test_a_wrong_shape_is_refused_with_a_clear_message(graph_file, tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.zeros((3, 4), np.float32))
    code, out, err = run(["run", graph_file, "--batch", "2", "--input", f"x={tmp_path / 'x.npy'}"], capsys)
    assert code == 1 and out == ""
    assert "input %x was given an array of shape [3, 4], but its type is f32[2, 4]" in err
    assert f"{graph_file}:2:9" in err and "Traceback" not in err


def test_a_wrong_dtype_is_refused(graph_file, tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.zeros((2, 4)))
    code, _, err = run(["run", graph_file, "--batch", "2", "--input", f"x={tmp_path / 'x.npy'}"], capsys)
    assert code == 1 and "input %x was given float64 data" in err


def test_a_missing_npy_file_is_refused(graph_file, tmp_path, capsys):
    code, _, err = run(["run", graph_file, "--batch", "2", "--input", f"x={tmp_path / 'absent.npy'}"], capsys)
    assert code == 1
    assert f"cannot read {tmp_path / 'absent.npy'}" in err and "Traceback" not in err


def test_a_file_that_is_not_npy_is_refused(graph_file, capsys):
    code, _, err = run(["run", graph_file, "--batch", "2", "--input", f"x={graph_file}"], capsys)
    assert code == 1 and "is not a .npy file" in err


def test_a_missing_rlx_file_is_refused(tmp_path, capsys):
    code, _, err = run(["run", tmp_path / "absent.rlx"], capsys)
    assert code == 1 and "cannot read" in err


def test_an_unknown_name_is_refused(graph_file, tmp_path, capsys):
    np.save(tmp_path / "q.npy", np.zeros(2, np.float32))
    code, _, err = run(["run", graph_file, "--batch", "2", "--input", f"q={tmp_path / 'q.npy'}"], capsys)
    assert code == 1 and "has no input or param %q" in err and "%x, %ids, %w, %table" in err


def test_an_unbound_symbol_is_refused(graph_file, capsys):
    code, _, err = run(["run", graph_file], capsys)
    assert code == 1 and "unbound symbol B" in err and "-D B=VALUE" in err


def test_a_malformed_input_option_is_a_usage_error(graph_file, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["run", str(graph_file), "--input", "x"])
    assert caught.value.code == 2
    assert "expected NAME=FILE" in capsys.readouterr().err
