"""Before/expected golden tests for passes.

Each file under ``tests/golden/passes/`` (one folder per pass) holds:

    # RUN: cse,dce                 the pipeline to run
    # BIND: B=2 S=4                (optional) symbol values for the semantic check
    # SEMANTICS: off               (optional) skip the interpreter comparison
    graph before(...) { ... }
    graph expected(...) { ... }

The test runs the pipeline on `before` with verification and change-claim checks after
every pass, renames the result `expected`, and compares its canonical text with the file's
`expected` graph. Unless `SEMANTICS: off`, it also interprets `before` and the result and
checks they compute the same outputs. ``RLXIR_UPDATE_GOLDEN=1`` rewrites `expected` from the
actual result.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

import rlxir
from rlxir.pass_machinery.instruments import VerifyEach
from rlxir.interpreter import interpret, random_feeds
from rlxir.pass_machinery.pipeline import parse_pipeline, run_pipeline

FOLDER = Path(__file__).parent / "passes"
FILES = sorted(FOLDER.rglob("*.rlx"))


def _directive(text: str, key: str) -> str | None:
    match = re.search(rf"^#\s*{key}:\s*(.*)$", text, re.MULTILINE)
    return match.group(1).strip() if match else None


def _renamed(graph: rlxir.Graph, name: str) -> rlxir.Graph:
    graph.name = name
    return graph


def _bindings(text: str, graph: rlxir.Graph) -> dict[str, int]:
    values = {symbol: 2 for symbol, default in graph.symbols.items() if default is None}
    for item in (_directive(text, "BIND") or "").split():
        symbol, _, value = item.partition("=")
        values[symbol] = int(value)
    return values


@pytest.mark.parametrize("path", FILES, ids=[str(path.relative_to(FOLDER)) for path in FILES])
def test_golden(path: Path):
    text = path.read_text()
    spec = _directive(text, "RUN")
    assert spec, f"{path} has no '# RUN: <pipeline>' line"
    # Build the pipeline first: importing its passes registers the stage annotations
    # (lower's `kernel`, `scan_kernel`, ...) that the file's graphs may already carry.
    pipeline = parse_pipeline(spec)
    module = rlxir.parse(text, str(path))
    before = module["before"]
    result = _renamed(run_pipeline(before, pipeline, instruments=[VerifyEach(strict_claims=True)]), "expected")
    actual = rlxir.print_graph(result)
    if os.environ.get("RLXIR_UPDATE_GOLDEN"):
        head = text[: text.index("graph expected")]
        path.write_text(head + actual)
        return
    assert actual == rlxir.print_graph(module["expected"])
    if _directive(text, "SEMANTICS") != "off":
        _check_semantics(before, result, _bindings(text, before))


def _check_semantics(before: rlxir.Graph, after: rlxir.Graph, bindings: dict[str, int]) -> None:
    # One set of feeds for both: the random fill depends on a value's readers (a variance
    # read by batchnorm is drawn positive), and a rewrite changes the readers.
    inputs, params = random_feeds(before, bindings=bindings, seed=1)
    expected = interpret(before, inputs, params, bindings=bindings)
    actual = interpret(after, inputs, params, bindings=bindings)
    # Outputs compare by position: a rewritten output is a new value (%y -> %y.1).
    assert len(before.outputs) == len(after.outputs)
    for name, new_name in zip(before.outputs, after.outputs):
        np.testing.assert_allclose(actual[new_name], expected[name], rtol=1e-4, atol=1e-5, err_msg=f"output %{name}")


def test_every_builtin_pass_has_a_golden():
    from rlxir.pass_machinery.pass_base import available_passes

    covered = {path.parent.name for path in FILES}
    builtin = {name for name, cls in available_passes().items() if cls.__module__.startswith("rlxir.passes.")}
    assert builtin <= covered, f"passes without golden tests: {sorted(builtin - covered)}"
