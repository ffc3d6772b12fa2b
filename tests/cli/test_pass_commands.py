"""`rlxir opt` and `rlxir passes` from the command line."""

from __future__ import annotations

import json

import pytest

from in_process_cli import run, write_graph


TEXT = """\
graph g(B) {
  input %x : f32[B, 4]
  %a = exp(%x)
  %b = exp(%x)
  %c = add(%a, %b)
  output %c
}
"""


@pytest.fixture
def graph_file(tmp_path):
    return write_graph(tmp_path / "g.rlx", TEXT)


def test_opt_prints_the_result_and_the_timing_table(graph_file, capsys):
    code, out, err = run(["opt", graph_file, "--pipeline", "cse,dce", "--time-passes"], capsys)
    assert code == 0
    assert "%c = add(%a, %a) : f32[B, 4]" in out and "%b" not in out
    assert "cse" in err and "nodes in" in err and "total" in err


def test_opt_print_after_goes_to_stderr(graph_file, capsys):
    code, out, err = run(["opt", graph_file, "-p", "cse", "--print-after", "cse"], capsys)
    assert code == 0 and "IR after cse" in err and "IR after" not in out


def test_opt_dump_dir_and_output_file(graph_file, tmp_path, capsys):
    target = tmp_path / "out.rlx"
    code, out, _ = run(["opt", graph_file, "-p", "cse,dce", "--dump-dir", tmp_path / "stages", "-o", target], capsys)
    assert code == 0 and out == ""
    assert (tmp_path / "stages" / "002-dce.rlx").read_text() == target.read_text()


def test_opt_bad_pipeline_is_a_located_error(graph_file, capsys):
    code, _, err = run(["opt", graph_file, "-p", "cse,fusee"], capsys)
    assert code == 1
    assert err.startswith("<pipeline>:1:5: pipeline error: unknown pass 'fusee'")


def test_opt_binds_symbols(graph_file, capsys):
    code, out, _ = run(["opt", graph_file, "-p", "dce", "--batch", "8"], capsys)
    assert code == 0 and "input %x : f32[8, 4]" in out


def test_passes_lists_names_docs_and_options(capsys):
    code, out, _ = run(["passes", "--json"], capsys)
    rows = {row["name"]: row for row in json.loads(out)}
    assert code == 0
    assert rows["dce"]["summary"].startswith("Remove ops and consts")
    assert "cse" in rows
