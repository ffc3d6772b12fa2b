"""bench/generators.py: every held-out generator writes valid text of the requested size that
`rlxir check` accepts and `rlxir compile --target rocm` plans, and is what its docstring says."""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import pytest

import rlxir
from rlxir.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from generators import GENERATORS  # noqa: E402  (bench/generators.py)

NAMES = sorted(GENERATORS)
STATEMENT = re.compile(r"^\s*(input|param|const|output|%\S+\s*=)", re.MULTILINE)


def op_counts(graph) -> Counter:
    return Counter(graph.op(name) for name in graph.schedule() if graph.op(name) not in ("input", "param", "const"))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("statements", [500, 1001, 2345])
def test_exactly_the_requested_statements_parse_and_verify(name, statements):
    text = GENERATORS[name](statements, 0)
    graph = rlxir.parse(text, f"<{name}>").main
    rlxir.verify(graph)
    assert len(graph) + 1 == statements  # every node, and the output statement
    assert len(STATEMENT.findall(text)) == statements


@pytest.mark.parametrize("name", NAMES)
def test_deterministic_from_the_seed(name):
    assert GENERATORS[name](500, 3) == GENERATORS[name](500, 3)
    assert GENERATORS[name](500, 3) != GENERATORS[name](500, 4)


@pytest.mark.parametrize("name", NAMES)
def test_the_cli_checks_and_compiles_for_rocm(name, tmp_path, capsys):
    path = tmp_path / f"{name}.rlx"
    path.write_text(GENERATORS[name](1000, 0))
    assert main(["check", str(path)]) == 0
    assert "ok, 1 graph" in capsys.readouterr().out
    assert main(["compile", str(path), "--target", "rocm", "--batch", "1"]) == 0
    assert "fits         yes" in capsys.readouterr().out


def test_each_generator_has_its_own_mix():
    graphs = {name: rlxir.parse(GENERATORS[name](2000, 0)).main for name in NAMES}
    texts = {name: GENERATORS[name](2000, 0) for name in NAMES}
    ops = {name: op_counts(graph) for name, graph in graphs.items()}
    assert {"conv2d", "batchnorm", "max_pool2d", "avg_pool2d"} <= set(ops["cnn"])
    assert re.search(r"%[\w.]{30,} = conv2d\(.*dilation = \[1, 1\], groups = 1\}", texts["cnn"])
    assert texts["mlp"].count("#") > 1000  # a comment on most lines
    assert not re.search(r"\) : f32", texts["mlp"])  # no result types: all inferred
    assert {"linear", "matmul", "gelu", "softmax"} <= set(ops["mlp"]) and "conv2d" not in ops["mlp"]
    assert {"concat", "cast", "cumsum", "where", "transpose", "reduce_mean"} <= set(ops["wide"])
    assert {"f16", "bf16", "i32", "bool"} <= set(re.findall(r"\b(f16|bf16|i32|bool)\[", texts["wide"]))
    widest = max(Counter(re.findall(r"%(b\d+)_\d+\.in = ", texts["wide"])).values())
    assert widest >= 10  # forks of many branches
    assert {"where", "reduce_sum", "gt"} <= set(ops["train"])
    assert re.search(r"output (%model\.layer\d+\.(weight|bias)_next, ){6}", texts["train"])
    for first in NAMES:
        for second in NAMES:
            if first < second:
                assert set(ops[first]) != set(ops[second])
