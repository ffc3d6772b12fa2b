"""The names the README and docs promise are importable from the top level of `rlxir`."""

import pydoc

import pytest

import rlxir

PROMISED = ["compile", "plan_arena_bytes", "fit_batch", "arena_budget", "device_arena_limit", "parse_pipeline",
            "run_pipeline", "parse", "parse_file", "interpret", "verify", "grad", "compile_training", "load_params",
            # what docs/passes.md and the example plugin import: a pass author's API
            "Pass", "PassContext", "option", "register_pass", "Rule", "rewrite_greedy", "TimePasses", "VerifyEach",
            "get_target", "register_target"]


@pytest.mark.parametrize("name", PROMISED)
def test_promised_name_is_exported_documented_and_listed(name):
    value = getattr(rlxir, name)
    assert name in rlxir.__all__
    assert value.__doc__ and value.__doc__.strip()
    assert name in pydoc.render_doc(rlxir)


def test_every_name_in_all_exists():
    missing = [name for name in rlxir.__all__ if not hasattr(rlxir, name)]
    assert missing == []


def test_readme_python_example_runs_through_top_level_names():
    graph = rlxir.parse_file("examples/mlp.rlx").main
    bindings = {"B": 2}
    result = rlxir.compile(graph, "rocm", bindings)
    assert result.arena_bytes == rlxir.plan_arena_bytes(graph, "rocm", bindings)
    assert result.arena_bytes > 0
    fit = rlxir.fit_batch("cuda", 4, 0.6, lambda batch: graph.bind({"B": batch}), vram=24 << 30)
    assert fit.batch == 4
