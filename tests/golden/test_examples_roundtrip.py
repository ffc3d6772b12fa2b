"""Every example graph under examples/ parses, verifies, prints canonically and binds.

For each ``examples/*.rlx``: the printed form reads back to an equal module and prints to
the same bytes again; it matches the committed golden ``tests/golden/examples/<name>.rlx``
(``RLXIR_UPDATE_GOLDEN=1`` rewrites the goldens); and binding B=2 (S=16 where declared)
gives a graph that verifies and round-trips too. The files examples/generate.py writes
must be exactly what it writes today.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

import rlxir

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GOLDEN = Path(__file__).parent / "examples"
FILES = sorted(EXAMPLES.glob("*.rlx"))
BINDINGS = {"B": 2, "S": 16}
REQUIRED = ("mlp", "gpt2_block", "gpt2_small", "mamba_block", "mamba_lm", "resnet")


def _canonical(path: Path) -> tuple[rlxir.Module, str]:
    module = rlxir.parse_file(path)
    return module, rlxir.print_module(module)


@pytest.fixture(scope="module", params=FILES, ids=[path.stem for path in FILES])
def example(request) -> tuple[Path, rlxir.Module, str]:
    path = request.param
    module, printed = _canonical(path)
    return path, module, printed


def test_the_promised_examples_exist():
    assert set(REQUIRED) <= {path.stem for path in FILES}


def test_example_verifies(example):
    _, module, _ = example
    for graph in module:
        rlxir.verify(graph)


def test_print_parses_back_to_an_equal_module(example):
    path, module, printed = example
    reparsed = rlxir.parse(printed, f"printed {path.name}")
    assert reparsed.equals(module)
    assert rlxir.print_module(reparsed) == printed


def test_print_matches_golden(example):
    path, _, printed = example
    golden = GOLDEN / path.name
    if os.environ.get("RLXIR_UPDATE_GOLDEN"):
        golden.write_text(printed, encoding="utf-8")
    assert golden.exists(), f"no golden for {path.name}; run with RLXIR_UPDATE_GOLDEN=1"
    assert printed == golden.read_text(encoding="utf-8")


def test_bound_example_verifies(example):
    _, module, _ = example
    for graph in module:
        values = {symbol: value for symbol, value in BINDINGS.items() if symbol in graph.symbols}
        bound = graph.bind(values)
        rlxir.verify(bound)
        assert not bound.symbols
        assert all(bound.type(name).is_static for name in bound.schedule())
        assert rlxir.parse(rlxir.print_graph(bound)).main.equals(bound)


def _generator():
    spec = importlib.util.spec_from_file_location("examples_generate", EXAMPLES / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generator_reproduces_the_committed_examples(tmp_path):
    written = _generator().write_examples(tmp_path)
    assert written, "the generator wrote nothing"
    for path in written:
        committed = EXAMPLES / path.name
        assert committed.exists(), f"{path.name} is generated but not committed"
        assert path.read_bytes() == committed.read_bytes(), f"examples/{path.name} differs from what generate.py writes"


def test_generated_examples_are_in_canonical_form():
    for name in _generator().GENERATED:
        path = EXAMPLES / name
        assert rlxir.print_module(rlxir.parse_file(path)) == path.read_text(encoding="utf-8")
