"""`rlxir run --target`: the compiled graph runs in its planned arena and is checked;
`rlxir compare --execute` adds the run column."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from in_process_cli import run

from rlxir.executor.runner import gpu_unavailable_reason


EXAMPLES = Path(__file__).parents[2] / "examples"


def output_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("%")]


def summaries(text: str) -> list[tuple[str, str, np.ndarray]]:
    """Each output line as (name, type, [mean, min, max]); the printed statistics are
    rounded to six digits, so an arena run and the interpreter may differ in the last."""
    rows = []
    for line in output_lines(text):
        name, type_, mean, low, high = re.fullmatch(r"(%\S+)\s+(.*?)\s+mean (\S+)\s+min (\S+)\s+max (\S+)", line).groups()
        rows.append((name, type_, np.array([float(mean), float(low), float(high)])))
    return rows


def test_gpt2_small_on_rocm_prints_the_interpreters_outputs(capsys):
    code, plain, _ = run(["run", EXAMPLES / "gpt2_small.rlx", "--batch", "2", "-D", "S=16"], capsys)
    assert code == 0
    code, arena, err = run(["run", EXAMPLES / "gpt2_small.rlx", "--target", "rocm", "--batch", "2", "-D", "S=16"],
                           capsys)
    assert code == 0, err
    expected, actual = summaries(plain), summaries(arena)
    assert expected and [row[:2] for row in actual] == [row[:2] for row in expected]
    for (_, _, mine), (_, _, theirs) in zip(actual, expected):
        np.testing.assert_allclose(mine, theirs, rtol=1e-4, atol=1e-8)
    assert "arena run   rocm on cpu: one arena of" in arena
    assert "check     ran, matched" in arena


@pytest.mark.parametrize("target", ["cpu", "cuda", "rocm", "metal", "gpu", "vulkan"])
def test_json_report_has_the_plan_numbers_and_the_verdict(target, capsys):
    code, out, err = run(["run", EXAMPLES / "mlp.rlx", "--target", target, "--batch", "2", "--json"], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["matched"] is True and report["verdict"] == "ran, matched"
    assert report["run"]["target"] == target and report["run"]["arena_bytes"] > 0
    assert report["run"]["poisoned_reads"] == [] and report["run"]["outside_fraction"] < 0.1
    assert [output["name"] for output in report["outputs"]] == ["probs"]


def test_outputs_written_under_the_original_names(tmp_path, capsys):
    code, out, err = run(["run", EXAMPLES / "mlp.rlx", "--target", "cuda", "--batch", "2", "-o", tmp_path], capsys)
    assert code == 0, err
    written = np.load(tmp_path / "probs.npy")
    assert written.shape == (2, 10)
    np.testing.assert_allclose(written.sum(axis=-1), 1.0, rtol=1e-5)


def test_training_step_runs_in_the_training_arena(capsys):
    argv = ["run", EXAMPLES / "mamba_lm.rlx", "--target", "cuda", "--batch", "1", "-D", "S=8", "--training"]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    # the default step ends with AdamW's update: the updated weights and state are its outputs
    assert "%next.embeddings.weight" in out and "%next.opt.v.embeddings.weight" in out
    assert "check     ran, matched" in out


def test_no_check_runs_without_the_reference(capsys):
    code, out, err = run(["run", EXAMPLES / "mlp.rlx", "--target", "metal", "--batch", "1", "--no-check"], capsys)
    assert code == 0, err
    assert "check" not in out.split("arena run")[1]


@pytest.mark.parametrize("flag", [["--training"], ["--json"], ["--no-check"], ["--device", "gpu"]])
def test_arena_flags_need_a_target(flag, capsys):
    code, out, err = run(["run", EXAMPLES / "mlp.rlx", "--batch", "1", *flag], capsys)
    assert code == 1 and "needs --target" in err and "Traceback" not in err


@pytest.mark.skipif(gpu_unavailable_reason() is None, reason="a CUDA device is present")
def test_gpu_device_without_cuda_is_a_clear_error(capsys):
    code, out, err = run(["run", EXAMPLES / "mlp.rlx", "--target", "cuda", "--batch", "1", "--device", "gpu"], capsys)
    assert code == 1 and "--device gpu needs CuPy and a CUDA device" in err and "rlxir[cuda]" in err


def test_compare_execute_adds_the_run_column(capsys):
    argv = ["compare", EXAMPLES / "gpt2_block.rlx", "--batch", "1", "-D", "S=8", "--execute", "--vram", "80GB"]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    header, _, *rows = out.splitlines()
    assert header.rstrip().endswith("run")
    assert len(rows) == 6 and all(row.rstrip().endswith("ran, matched") for row in rows)


def test_compare_execute_training_json(capsys):
    argv = ["compare", EXAMPLES / "mamba_block.rlx", "--batch", "1", "-D", "S=8", "--execute", "--training",
            "--json", "--targets", "cpu,rocm"]
    # mamba_block's output is not a scalar loss: the training step is refused, located
    code, out, err = run(argv, capsys)
    assert code == 1 and "not a floating-point scalar" in err
    argv[1] = EXAMPLES / "mamba_lm.rlx"
    code, out, err = run(argv, capsys)
    assert code == 0, err
    rows = json.loads(out)
    assert [row["run"] for row in rows] == ["ran, matched", "ran, matched"]


CANCELS = """graph cancel() {
  input %a : bf16[64]
  input %b : bf16[64]
  input %c : bf16[64]
  %p = mul(%a, %b) : bf16[64]
  %d = sub(%p, %c) : bf16[64]
  %o = cast(%d) {to = f32} : f32[64]
  output %o
}
"""


def test_a_precision_difference_beyond_tolerance_fails_as_precision(tmp_path, capsys):
    from rlxir.ops.reference import round_to_bf16

    rng = np.random.default_rng(0)
    a = round_to_bf16(rng.uniform(3, 4, 64).astype(np.float32))
    b = round_to_bf16(rng.uniform(3, 4, 64).astype(np.float32))
    feeds = {"a": a, "b": b, "c": round_to_bf16(a * b)}  # the interpreter's difference is 0, f32's is not
    argv = ["run", tmp_path / "cancel.rlx", "--target", "rocm"]
    (tmp_path / "cancel.rlx").write_text(CANCELS)
    for name, values in feeds.items():
        np.save(tmp_path / f"{name}.npy", values)
        argv += ["-i", f"{name}={tmp_path / f'{name}.npy'}"]
    code, out, err = run(argv, capsys)
    assert code == 1
    assert "precision beyond tolerance on %o: relative error" in err and "bf16 tolerance rtol 0.02" in err
    assert "a defect in" not in err and "not a planner defect" in err
    assert "precision %o: relative error" in out


def test_the_bf16_example_matches_on_rocm_with_its_precision_shown(capsys):
    argv = ["run", EXAMPLES / "bf16_block.rlx", "--target", "rocm", "--batch", "1", "-D", "S=16"]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert "check     ran, matched" in out and "precision %logits: relative error" in out
    assert "(bf16 tolerance rtol 0.02, atol 0.01)" in out


def test_compare_execute_runs_the_reference_once_and_shows_each_target(monkeypatch, capsys):
    import sys

    import rlxir.executor.check as check_module

    graphs = []
    interpret = check_module.interpret

    def counted(graph, *args, **kwargs):
        graphs.append(graph.name)
        return interpret(graph, *args, **kwargs)

    monkeypatch.setattr(check_module, "interpret", counted)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # progress shows on a terminal only
    code, out, err = run(["compare", EXAMPLES / "mlp.rlx", "--batch", "2", "--execute", "--vram", "80GB"], capsys)
    assert code == 0, err
    assert graphs == ["mlp"]  # one reference run, shared by the six targets
    rows = out.splitlines()[2:]
    assert len(rows) == 6 and all(row.rstrip().endswith("ran, matched") for row in rows)
    assert "running the reference interpreter (once, for every target)" in err
    for number, target in enumerate(["cpu", "cuda", "gpu", "metal", "rocm", "vulkan"], 1):
        assert f"[{number}/6, " in err and f"] {target}: running the plan in its arena (" in err
