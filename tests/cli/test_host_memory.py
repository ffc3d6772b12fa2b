"""`rlxir run` refuses, before it starts, a run whose host memory is not available, with the
figures: the interpreter's peak by the graph's liveness, the arena and its side buffers,
the feeds and the outputs, against MemAvailable."""

from __future__ import annotations

from pathlib import Path

import pytest

from in_process_cli import run

import rlxir
import rlxir.cli.host_memory as host_memory
from rlxir.cli.host_memory import host_need
from rlxir.interpreter import live_peak

EXAMPLES = Path(__file__).parents[2] / "examples"


def fake_meminfo(monkeypatch, tmp_path, kilobytes: int) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal:       99999999 kB\nMemFree:        1 kB\nMemAvailable:   {kilobytes} kB\n")
    monkeypatch.setattr(host_memory, "MEMINFO", meminfo)


def mlp_need(target: str | None) -> int:
    graph = rlxir.parse_file(EXAMPLES / "mlp.rlx").main.bind({"B": 64})
    if target is None:
        return host_need(graph).total
    result = rlxir.compile(graph, target)
    return host_need(graph, result.graph, result.arena_bytes + sum(result.side_buffers.values())).total


def test_the_interpreter_is_refused_with_the_figures(monkeypatch, tmp_path, capsys):
    need = mlp_need(None)
    fake_meminfo(monkeypatch, tmp_path, need // 1024 - 1)
    code, out, err = run(["run", EXAMPLES / "mlp.rlx", "--batch", "64"], capsys)
    assert code == 1 and out == ""
    assert "this run needs about" in err and "the interpreter's peak" in err
    assert f"is available (MemAvailable in {tmp_path / 'meminfo'})" in err and "--batch" in err
    fake_meminfo(monkeypatch, tmp_path, need // 1024 + 1)
    code, out, err = run(["run", EXAMPLES / "mlp.rlx", "--batch", "64"], capsys)
    assert code == 0, err


def test_the_arena_run_counts_the_arena_too(monkeypatch, tmp_path, capsys):
    interpreter_only, with_arena = mlp_need(None), mlp_need("cuda")
    assert with_arena > interpreter_only
    fake_meminfo(monkeypatch, tmp_path, (interpreter_only + with_arena) // 2048)
    code, _, err = run(["run", EXAMPLES / "mlp.rlx", "--batch", "64"], capsys)
    assert code == 0, err
    code, out, err = run(["run", EXAMPLES / "mlp.rlx", "--batch", "64", "--target", "cuda"], capsys)
    assert code == 1 and "then the arena and side buffers" in err and "arena run" not in out


def test_the_liveness_walk_frees_values_after_their_last_reader():
    graph = rlxir.parse("""
graph chain() {
  input %x : f32[1024]
  %a = exp(%x) : f32[1024]
  %b = exp(%a) : f32[1024]
  %c = exp(%b) : f32[1024]
  %d = exp(%c) : f32[1024]
  output %d
}
""").main
    # at each step: the operand, the result and its scratch (one more result); never the whole chain
    assert live_peak(graph).bytes == 3 * 4096


@pytest.mark.parametrize("example, sizes", [("gpt2_block", {"S": 16}), ("gpt2_block", {"S": 384}),
                                            ("mamba_block", {"S": 16}), ("resnet", {})])
def test_the_walk_bounds_what_the_interpreter_holds(example, sizes):
    import tracemalloc

    graph = rlxir.parse_file(EXAMPLES / f"{example}.rlx").main
    graph = graph.bind({symbol: {"B": 1, **sizes}.get(symbol, 8) for symbol in graph.symbols})
    tracemalloc.start()
    try:
        rlxir.interpret(graph)
        held = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    walk = live_peak(graph).bytes  # at S = 384 the attention scores are the largest values
    assert held <= 1.2 * walk + (1 << 20), (held, walk)


def test_compare_execute_leaves_a_run_that_does_not_fit_unrun(monkeypatch, tmp_path, capsys):
    fake_meminfo(monkeypatch, tmp_path, mlp_need(None) // 1024 - 1)  # not even the reference run fits
    argv = ["compare", EXAMPLES / "mlp.rlx", "--batch", "64", "--execute", "--vram", "80GB", "--targets", "cpu,cuda"]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    rows = out.splitlines()[2:]
    assert len(rows) == 2 and all("not run (this run needs about" in row for row in rows)
    assert "is available (MemAvailable in" in rows[0]
