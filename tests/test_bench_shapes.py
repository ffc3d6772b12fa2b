"""bench/shapes.py: each shape is valid text that compiles (or trains) as the bench runs
it, exercises what its docstring names, and the bench prints a growth per 4x per shape."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import rlxir

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import shapes  # noqa: E402  (bench/shapes.py)


@pytest.mark.parametrize("name", sorted(shapes.SHAPES))
def test_every_shape_parses_verifies_and_runs(name):
    write, run, scale = shapes.SHAPES[name]
    text = write(4 * scale)
    rlxir.verify(rlxir.parse(text).main)
    run(text)


def test_qkv_declares_weights_between_the_matmuls_that_fuse_merges():
    graph = rlxir.parse(shapes.qkv_text(2)).main
    schedule = graph.schedule()
    assert schedule.index("wk0") > schedule.index("q0") and schedule.index("b0") < schedule.index("wv0")
    compiled = rlxir.compile(graph, "rocm", {"B": 2}).graph
    assert any(compiled.op(node) == "concat" and compiled.operands(node) == ("wq0", "wk0", "wv0")
               for node in compiled.schedule())


def test_the_bench_prints_a_growth_per_4x_for_each_shape():
    done = subprocess.run([sys.executable, str(BENCH / "shapes.py"), "--sizes", "2", "4", "--json",
                           "--shapes", "qkv", "params-first-train"], capture_output=True, text=True, check=True)
    rows = json.loads(done.stdout)
    assert [(row["shape"], row["size"]) for row in rows] == [("qkv", 2), ("qkv", 4), ("params-first-train", 2),
                                                             ("params-first-train", 4)]
    assert [row["x_per_4x"] is None for row in rows] == [True, False, True, False]
