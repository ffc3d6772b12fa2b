"""`rlxir grad`, and `compile`, `fit` and `compare` with `--training`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rlxir
from rlxir.autodiff.training import plan_training_arena_bytes

from in_process_cli import run

ROOT = Path(__file__).resolve().parents[2]
MAMBA_LM = ROOT / "examples" / "mamba_lm.rlx"
LOSS = """\
graph tiny(B=2) {
  input %x : f32[B, 4]
  param %w : f32[4, 3]
  param %b : f32[3]
  %h = linear(%x, %w, %b)
  %big = gt(%h, %b)
  %mask = cast(%big) {to = f32}
  %loss = reduce_sum(%mask) {axes = [0, 1]}
  output %loss
}
"""


def test_grad_writes_the_backward_graph(tmp_path, capsys):
    out = tmp_path / "mamba_lm.grad.rlx"
    code, stdout, err = run(["grad", MAMBA_LM, "-o", out], capsys)
    assert code == 0 and err == ""
    assert f"wrote {out}: graph mamba_lm.grad" in stdout and "122 gradients" in stdout
    backward = rlxir.parse_file(out).main
    assert backward.symbols == {"B": None, "S": 256}
    assert backward.outputs[1:4] == ["grad.embeddings.weight", "grad.layers.0.norm.weight",
                                     "grad.layers.0.mixer.in_proj.weight"]
    code, again, _ = run(["check", out], capsys)
    assert code == 0 and "mamba_lm.grad" in again


def test_grad_prints_to_stdout_for_the_values_asked(capsys):
    code, stdout, _ = run(["grad", MAMBA_LM, "--wrt", "norm_f.weight,%layers.11.mixer.D", "-D", "S=4"], capsys)
    graph = rlxir.parse(stdout).main
    assert code == 0 and graph.outputs == ["loss", "grad.norm_f.weight", "grad.layers.11.mixer.D"]
    assert graph.symbols == {"B": None}


def test_grad_refuses_an_op_without_a_gradient_at_its_line(tmp_path, capsys):
    path = tmp_path / "tiny.rlx"
    path.write_text(LOSS)
    code, stdout, err = run(["grad", path], capsys)
    assert code == 1 and stdout == ""
    assert f"{path}:6:3: error: cannot differentiate %big = gt: gt has no gradient" in err


def test_compile_training_reports_both_arenas(capsys):
    code, out, err = run(["compile", MAMBA_LM, "-t", "rocm", "--training", "--batch", "1", "-D", "S=8",
                          "--vram", "24GiB"], capsys)
    assert code == 0 and err == ""
    arena = plan_training_arena_bytes(rlxir.parse_file(MAMBA_LM).main, "rocm", {"B": 1, "S": 8})
    for text in ("training step: the loss, gradients and adamw (lr 0.001, weight_decay 0.01", "updating 122 weights",
                 "245 state params", "pass (training step)", "forward arena ", f"training arena  {arena} B",
                 "  weights ", "  optimizer state ", "  gradients ", "  activations ", "  workspace ", "total ",
                 "fits            yes"):
        assert text in out


def test_compile_training_without_an_optimizer_keeps_the_gradients(capsys):
    code, out, _ = run(["compile", MAMBA_LM, "-t", "rocm", "--training", "--optimizer", "none", "--batch", "1",
                        "-D", "S=8", "--vram", "24GiB"], capsys)
    arena = plan_training_arena_bytes(rlxir.parse_file(MAMBA_LM).main, "rocm", {"B": 1, "S": 8}, optimizer=None)
    assert code == 0 and "the loss and 122 gradients (no optimizer)" in out and f"training arena  {arena} B" in out
    assert "  optimizer state 0 B" in out


def test_an_optimizer_option_the_optimizer_does_not_use_is_a_usage_error(capsys):
    for argv, message in ((["--training", "--optimizer", "sgd", "--beta1", "0.5"], "--optimizer sgd has no --beta1"),
                          (["--lr", "0.1"], "--lr needs --training"),
                          (["--optimizer", "sgd"], "--optimizer needs --training")):
        with pytest.raises(SystemExit) as exited:
            run(["compile", MAMBA_LM, "-t", "rocm", *argv], capsys)
        assert exited.value.code == 2 and message in capsys.readouterr().err


def test_compile_training_json_and_refusal(capsys):
    code, out, err = run(["compile", MAMBA_LM, "-t", "rocm", "--training", "--batch", "8", "--json"], capsys)
    report = json.loads(out)
    assert code == 1 and report["refused"] is True and report["training"] is True
    assert report["arena_bytes"] > report["ceiling_bytes"] == 4294967295
    assert {"forward_arena_bytes", "arena_bytes", "total_bytes", "weight_bytes", "stages", "breakdown"} <= set(report)
    assert sum(report["breakdown"].values()) == report["arena_bytes"]
    assert report["optimizer"]["optimizer"] == "adamw" and report["optimizer"]["weight_decay"] == 0.01
    assert "rocm refuses this training step" in err


def test_fit_training_finds_the_largest_batch(capsys):
    code, out, err = run(["fit", MAMBA_LM, "--target", "rocm", "--training", "--max-batch", "64", "--vram", "24GiB"],
                         capsys)
    assert code == 0 and err == ""
    assert "training step: the arena of the backward graph" in out
    assert "largest batch that fits: 1 (arena" in out and "batch 1 fits and batch 2 does not" in out
    assert "training arena at batch 1:" in out and "  optimizer state " in out


def test_fit_training_json_has_the_arena_by_part_at_the_answer(capsys):
    code, out, _ = run(["fit", MAMBA_LM, "--target", "cpu", "--training", "--optimizer", "momentum", "-D", "S=8",
                        "--max-batch", "8", "--vram", "2GiB", "--json"], capsys)
    report = json.loads(out)
    assert code == 0 and report["optimizer"] == {"optimizer": "momentum", "lr": 0.001, "weight_decay": 0.0,
                                                 "momentum": 0.9}
    assert sum(report["breakdown"].values()) == report["arena_bytes"]
    assert report["breakdown"]["optimizer_state"] > 0


def test_compare_training_has_a_row_per_target(capsys):
    code, out, _ = run(["compare", MAMBA_LM, "--training", "--batch", "2", "-D", "S=4", "--targets", "cpu,rocm,gpu",
                        "--json"], capsys)
    rows = json.loads(out)
    assert code == 0 and [row["target"] for row in rows] == ["cpu", "rocm", "gpu"]
    assert min(row["ratio_to_best"] for row in rows) == 1.0
    assert all(row["arena_bytes"] >= row["lower_bound_bytes"] for row in rows)
    code, text, _ = run(["compare", MAMBA_LM, "--training", "--batch", "2", "-D", "S=4", "--targets", "cpu"], capsys)
    assert code == 0 and "training arena" in text and "forward arena" in text
