"""`rlxir compile`, `fit`, `compare`, `targets`, `plan`, `plan-csv` from the command line."""

from __future__ import annotations

import csv
import inspect
import json
from pathlib import Path

import pytest

from rlxir import parse_file
from rlxir.cli import main
from rlxir.cli.main import build_parser
from rlxir.compiler.compile import compile as compile_graph
from rlxir.compiler.budget import DEFAULT_HEADROOM, arena_budget
from rlxir.planning import DEFAULT_TIME_BUDGET, BestPlanner
from rlxir.targets.target import available_targets, get_target, register_target, unregister_target

from in_process_cli import run

ROOT = Path(__file__).resolve().parents[2]
GPT2_BLOCK = ROOT / "examples" / "gpt2_block.rlx"
MINIMALLOC = ROOT / "tests" / "data" / "planning" / "minimalloc" / "examples" / "input.12.csv"
BIG = "graph big(N) {\n  input %x : f32[N]\n  %y = exp(%x)\n  output %y\n}\n"


def test_compile_reports_the_plan(capsys):
    code, out, err = run(["compile", GPT2_BLOCK, "--target", "rocm", "--batch", "2", "-D", "S=16",
                          "--vram", "24GiB", "--print-pipeline"], capsys)
    assert code == 0 and err == ""
    expected = compile_graph(parse_file(GPT2_BLOCK).main, "rocm", {"B": 2, "S": 16})
    lines = out.splitlines()
    assert lines[0] == "pipeline  " + get_target("rocm").pipeline
    for text in (f"arena        {expected.arena_bytes} B", f"lower bound  {expected.lower_bound_bytes} B",
                 "side buffer  blas_workspace 4194304 B", "side buffer  dnn_workspace 33554432 B",
                 "ceiling      4294967295 B", "budget       4294967295 B", "fits         yes"):
        assert any(line.startswith(text) for line in lines), text


def test_compile_json_has_the_documented_keys(capsys):
    code, out, _ = run(["compile", GPT2_BLOCK, "-t", "cuda", "--batch", "2", "-D", "S=16", "--json", "--vram", "8GiB"],
                       capsys)
    report = json.loads(out)
    assert code == 0
    assert {"target", "arena_bytes", "lower_bound_bytes", "budget_bytes", "ceiling_bytes", "fits",
            "side_buffers"} <= set(report)
    assert report["target"] == "cuda" and report["ceiling_bytes"] is None and report["fits"] is True
    assert report["side_buffers"] == {"blas_workspace": 4194304, "dnn_workspace": 33554432}


def test_compile_refuses_past_the_ceiling(tmp_path, capsys):
    path = tmp_path / "big.rlx"
    path.write_text(BIG)
    code, out, err = run(["compile", path, "--target", "rocm", "-D", "N=600000000"], capsys)
    assert code == 1
    assert "rocm refuses this graph: its arena needs 4800000000 B" in err and "4294967295 B" in err
    assert "fits         no: past the rocm ABI ceiling of 4294967295 B" in out


def test_compile_unbound_symbol_exits_1(capsys):
    code, out, err = run(["compile", GPT2_BLOCK, "--target", "cpu", "--batch", "2"], capsys)
    assert code == 1 and out == "" and "unbound symbol S" in err


def test_compile_bad_input_exits_1(tmp_path, capsys):
    path = tmp_path / "bad.rlx"
    path.write_text("graph g {\n  input %x : f32[4]\n  %y = expp(%x)\n  output %y\n}\n")
    code, _, err = run(["compile", path, "--target", "cpu"], capsys)
    assert code == 1 and f"{path}:3:8: type error: unknown op 'expp'" in err


def test_compile_emit_mir_prints_the_graph_as_written_before_the_compiled_report(capsys):
    """`compile` binds and transforms the graph it parsed itself, not a copy, except where
    --emit mir prints that graph after the pipeline has run."""
    code, out, _ = run(["compile", GPT2_BLOCK, "-t", "cpu", "--batch", "1", "-D", "S=8", "--emit", "mir"], capsys)
    assert code == 0
    assert out.startswith(GPT2_BLOCK.read_text().splitlines()[0])  # the header with its symbols, unbound
    assert "f32[B, S, " in out and "fused_" not in out.split("target cpu")[0]
    expected = compile_graph(parse_file(GPT2_BLOCK).main, "cpu", {"B": 1, "S": 8})
    assert f"arena        {expected.arena_bytes} B" in out


def test_compile_emit_lir_prints_annotations(capsys):
    code, out, _ = run(["compile", GPT2_BLOCK, "-t", "cpu", "--batch", "1", "-D", "S=8", "--emit", "lir"], capsys)
    assert code == 0 and 'kernel_family = "gemm"' in out


def test_fit_finds_the_largest_batch(capsys):
    code, out, _ = run(["fit", GPT2_BLOCK, "--target", "cuda", "--max-batch", "64", "-D", "S=128",
                        "--vram", "512MiB", "--json"], capsys)
    result = json.loads(out)
    assert code == 0
    assert {"batch", "fits", "arena_bytes", "budget_bytes", "tried"} <= set(result)
    fitting = [trial["batch"] for trial in result["tried"] if trial["fits"]]
    failing = [trial["batch"] for trial in result["tried"] if not trial["fits"]]
    assert result["batch"] == max(fitting) and result["batch"] + 1 in failing
    assert all({"batch", "arena_bytes", "fits"} == set(trial) for trial in result["tried"])


def test_fit_table_and_refusal_at_batch_one(tmp_path, capsys):
    path = tmp_path / "big.rlx"
    path.write_text("graph big(B) {\n  input %x : f32[B, 100000000]\n  %y = exp(%x)\n  output %y\n}\n")
    code, out, _ = run(["fit", path, "--target", "rocm", "--max-batch", "8", "--vram", "24GiB"], capsys)
    assert code == 0  # 0.8 GB per batch under the 4 GiB ceiling: 5 fits, 6 does not
    assert "largest batch that fits: 5" in out and "4800000000 B (4.47 GiB)  no" in out
    code, out, _ = run(["fit", path, "--target", "rocm", "--max-batch", "8", "--vram", "1GiB"], capsys)
    assert code == 1 and "does not fit: even batch 1" in out


def test_fit_needs_the_batch_symbol(capsys):
    code, _, err = run(["fit", GPT2_BLOCK, "--target", "cpu", "--max-batch", "4", "--batch-dim", "N"], capsys)
    assert code == 1 and "has no batch symbol N" in err


def test_compare_prints_one_row_per_target(capsys):
    code, out, _ = run(["compare", GPT2_BLOCK, "--batch", "2", "-D", "S=16", "--vram", "24GiB", "--json"], capsys)
    rows = json.loads(out)
    assert code == 0
    builtin = ["cpu", "cuda", "gpu", "metal", "rocm", "vulkan"]  # other tests may register derived targets
    assert [row["target"] for row in rows if row["target"] in builtin] == builtin
    assert min(row["ratio_to_best"] for row in rows) == 1.0
    code, out, _ = run(["compare", GPT2_BLOCK, "--batch", "2", "-D", "S=16", "--targets", "cpu,rocm"], capsys)
    assert code == 0 and out.count("\n") == 4


def test_targets_lists_pipelines(capsys):
    code, out, _ = run(["targets", "--json"], capsys)
    rows = {row["target"]: row for row in json.loads(out)}
    assert code == 0 and set(rows) == {"cpu", "cuda", "rocm", "metal", "gpu", "vulkan"}
    assert rows["rocm"]["ceiling_bytes"] == 4294967295 and rows["cuda"]["planner"] == "bump"


def test_plan_json_and_plot(tmp_path, capsys):
    code, out, _ = run(["plan", GPT2_BLOCK, "--batch", "2", "-D", "S=16", "--json"], capsys)
    plan = json.loads(out)
    assert code == 0 and plan["planner"] == "liveness" and plan["arena_bytes"] >= plan["lower_bound_bytes"]
    assert all({"offset", "size", "start", "end", "value"} <= set(buffer) for buffer in plan["buffers"])
    pytest.importorskip("matplotlib")
    picture = tmp_path / "plan.png"
    code, out, _ = run(["plan", GPT2_BLOCK, "--batch", "2", "-D", "S=16", "--plot", picture, "--target", "rocm"],
                       capsys)
    assert code == 0 and picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plan_csv_writes_offsets(tmp_path, capsys):
    target = tmp_path / "solution.csv"
    code, out, _ = run(["plan-csv", MINIMALLOC, "--json", "--offsets", target], capsys)
    report = json.loads(out)
    assert code == 0
    assert {"buffers", "arena_bytes", "lower_bound_bytes", "ratio", "seconds"} <= set(report)
    assert report["arena_bytes"] >= report["lower_bound_bytes"] == 12
    rows = list(csv.DictReader(target.open()))
    assert len(rows) == report["buffers"] and "offset" in rows[0]


@pytest.mark.parametrize("command", [["fit", "--max-batch", "4"], ["compare"]])
def test_fit_and_compare_name_an_unbound_symbol(command, capsys):
    code, out, err = run([command[0], GPT2_BLOCK, *command[1:], *(["--target", "cpu"] if command[0] == "fit" else [])],
                         capsys)
    assert code == 1 and ("unbound symbol S" in err or "unbound symbols B, S" in err) and "Traceback" not in err


@pytest.mark.parametrize("command", [["fit", "--target", "cpu", "--max-batch", "4"], ["compare"]])
def test_fit_and_compare_reject_bad_input_with_a_location(command, tmp_path, capsys):
    path = tmp_path / "bad.rlx"
    path.write_text("graph g(B) {\n  input %x : f32[B, 4]\n  %y = exp(%x, %x)\n  output %y\n}\n")
    code, _, err = run([command[0], path, *command[1:]], capsys)
    assert code == 1 and err.startswith(f"{path}:3:") and "exp takes 1 operand" in err


def test_compare_marks_a_target_past_its_ceiling(tmp_path, capsys):
    path = tmp_path / "big.rlx"
    path.write_text(BIG)
    code, out, _ = run(["compare", path, "-D", "N=600000000", "--targets", "cuda,rocm", "--json"], capsys)
    rows = {row["target"]: row for row in json.loads(out)}
    assert code == 0
    assert rows["rocm"]["fits"] is False and rows["rocm"]["fits_reason"].startswith("past the rocm ABI ceiling")
    assert rows["cuda"]["arena_bytes"] == 4_800_000_000


def test_compile_runs_a_plugin_pass_inserted_into_the_target_pipeline(monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(ROOT / "examples" / "plugin" / "src"))
    code, out, _ = run(["compile", ROOT / "examples" / "mlp.rlx", "--target", "rocm", "--batch", "2",
                        "--plugin", "rlxir_strength", "--insert-after", "fuse=mul-by-two-to-add,dce",
                        "--print-pipeline"], capsys)
    assert code == 0
    assert "legalize-broadcast,fuse,mul-by-two-to-add,dce,legalize-or-rewrite,f32-exec" in out
    assert "  mul-by-two-to-add " in out  # its row in the per-pass node counts


def test_insertion_errors(capsys):
    code, _, err = run(["compile", ROOT / "examples" / "mlp.rlx", "-t", "cpu", "--batch", "2",
                        "--insert-before", "fusee=dce"], capsys)
    assert code == 1 and "pipeline has no pass 'fusee'" in err
    with pytest.raises(SystemExit) as exit_info:
        main(["compile", str(ROOT / "examples" / "mlp.rlx"), "-t", "cpu", "--insert-after", "fuse"])
    assert exit_info.value.code == 2


@pytest.mark.parametrize("command", ["compile", "fit", "run"])
def test_the_target_help_lists_the_registered_targets(command, capsys):
    register_target(get_target("cuda").derive("cuda-listed"))
    try:
        with pytest.raises(SystemExit):
            main([command, "--help"])
    finally:
        unregister_target("cuda-listed")
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"--target T, -t T {', '.join(available_targets())}, cuda-listed" in help_text


def test_the_budget_defaults_are_the_library_s(capsys):
    args = build_parser().parse_args(["compile", "m.rlx", "--target", "cpu"])
    assert args.headroom == DEFAULT_HEADROOM == inspect.signature(arena_budget).parameters["headroom"].default
    with pytest.raises(SystemExit):
        main(["compile", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"(default {DEFAULT_HEADROOM:g})" in help_text and f"(default {DEFAULT_TIME_BUDGET:g})" in help_text
    assert BestPlanner().default_budget == DEFAULT_TIME_BUDGET
