"""Hostile plugins and pass options: a plugin that takes a built-in's name, exits, prints or
changes the interface; pass names in flags and pipeline text; stage lines on a terminal."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest

from rlxir.pass_machinery import pass_base
from rlxir.cli import progress


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

PASS_HEADER = """\
import attrs
from rlxir.pass_machinery.pass_base import Pass, register_pass
"""

# The smallest graph every target compiles (no symbols to bind).
SMALL_GRAPH = """\
graph small(B=4) {
  input %x : f32[B, 8]
  %y = relu(%x) : f32[B, 8]
  output %y
}
"""


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """Write a plugin module `name` with `body` (after the imports a pass needs) and return
    its name; the module and the passes it registered are forgotten after the test."""
    monkeypatch.syspath_prepend(str(tmp_path))
    written: list[str] = []
    registered_before = dict(pass_base.available_passes())  # every built-in, registered once

    def write(name: str, body: str) -> str:
        (tmp_path / f"{name}.py").write_text(PASS_HEADER + textwrap.dedent(body))
        written.append(name)
        return name

    yield write
    for name in written:
        sys.modules.pop(name, None)
    for name in set(pass_base._PASSES) - set(registered_before):
        del pass_base._PASSES[name]


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.rlx"
    path.write_text(SMALL_GRAPH)
    return path


def pass_class(name: str, run_body: str, class_name: str = "PluginPass") -> str:
    """Source of a registered pass `name` whose run does `run_body` (indented for a method)."""
    return f"""
@register_pass
@attrs.frozen
class {class_name}(Pass):
    \"\"\"A plugin pass.\"\"\"

    name = {name!r}

    def run(self, graph, ctx):
{textwrap.indent(textwrap.dedent(run_body), " " * 8)}
"""


BUILTIN_NAMED = pass_class("dce", "return False", "ImpostorDce")


# --- items 2 and 8: a plugin pass named like a built-in ------------------------------------
def test_passes_refuses_a_plugin_pass_named_like_a_builtin(cli, plugin):
    code, out, err = cli("passes", "--plugin", plugin("impostor_dce", BUILTIN_NAMED))
    assert code == 1 and out == ""
    assert "plugin 'impostor_dce'" in err and "'dce' is already registered" in err


@pytest.mark.parametrize("command", [
    ["opt", "{graph}", "-p", "dce"],
    ["compile", "{graph}", "--target", "cpu"],
    ["fit", "{graph}", "--target", "cpu", "--vram", "1GiB", "--max-batch", "2", "--jobs", "1"],
])
def test_a_plugin_never_replaces_a_builtin_pass(cli, plugin, small, command):
    module = plugin("impostor_dce", BUILTIN_NAMED)
    code, _, err = cli(*[part.format(graph=small) for part in command], "--plugin", module)
    assert code == 1, err
    assert "plugin 'impostor_dce'" in err and "'dce' is already registered" in err
    assert pass_base.get_pass("dce").__module__ == "rlxir.passes.dce"


# --- item 9: the interface check on every route that runs passes ---------------------------
RETYPE_OUTPUT = pass_class("retype-output", """\
    from rlxir.dtypes import DType
    from rlxir.types import TensorType
    output = graph.outputs[0]
    graph.set_type(output, TensorType(DType.f16, graph.type(output).shape))
    return True
""")


@pytest.mark.parametrize("command", [
    ["opt", "{graph}", "-p", "retype-output"],
    ["opt", "{graph}", "-p", "retype-output", "--no-verify"],
    ["compile", "{graph}", "--target", "cpu", "--insert-after", "dce=retype-output"],
    ["compile", "{graph}", "--target", "cuda", "--insert-before", "dce=retype-output", "--json"],
    ["fit", "{graph}", "--target", "cpu", "--vram", "1GiB", "--max-batch", "2", "--jobs", "1",
     "--insert-after", "dce=retype-output"],
    ["compare", "{graph}", "--jobs", "2", "--insert-after", "dce=retype-output"],
])
def test_a_pass_that_changes_an_output_type_is_refused_everywhere(cli, plugin, small, command):
    module = plugin("retype_plugin", RETYPE_OUTPUT)
    code, _, err = cli(*[part.format(graph=small) for part in command], "--plugin", module)
    assert code == 1, err
    assert "pass retype-output changed the interface of graph small" in err
    assert re.search(r"output %y was f32\[(B|\d+), 8\], now f16\[(B|\d+), 8\]", err)
    assert f"{small}:4:" in err  # located at the output line


def test_the_compiler_itself_refuses_an_interface_change(plugin, small):
    from rlxir.compiler.compile import compile as compile_graph
    from rlxir.ir.parser import parse
    from rlxir.pass_machinery.pass_base import PassError
    from rlxir.targets.target import get_target

    pass_base.load_plugin(plugin("retype_for_api", RETYPE_OUTPUT))
    cpu = get_target("cpu")
    retyping = cpu.derive("cpu", pipeline=cpu.pipeline + ",retype-output")
    with pytest.raises(PassError, match=r"pass retype-output changed the interface"):
        compile_graph(parse(SMALL_GRAPH).main, retyping)


# --- item 10: plugins that exit, raise or print ----------------------------------------------
@pytest.mark.parametrize("status", [0, 5])
def test_a_plugin_that_exits_while_loading(cli, plugin, small, status):
    module = plugin(f"exits_{status}", f"import sys\nsys.exit({status})\n")
    code, out, err = cli("opt", small, "-p", "dce", "--plugin", module)
    assert code == 1 and out == ""
    assert f"plugin '{module}' called sys.exit({status}) while loading" in err


def test_a_plugin_that_prints_while_loading_keeps_json_clean(cli, plugin, small):
    module = plugin("chatty_plugin", "print('hello from the plugin')\n")
    code, out, err = cli("compile", small, "--target", "cpu", "--json", "--plugin", module)
    assert code == 0, err
    assert json.loads(out)["target"] == "cpu"
    assert "hello from the plugin" in err and "hello" not in out


def test_passes_json_stays_clean_with_a_chatty_plugin(cli, plugin):
    module = plugin("chatty_lister", "print('loading...')\n" + pass_class("chatty-pass", "return False"))
    code, out, err = cli("passes", "--json", "--plugin", module)
    assert code == 0 and "loading..." in err
    assert "chatty-pass" in [row["name"] for row in json.loads(out)]


EXITING_PASS = pass_class("exit-seven", "import sys\nsys.exit(7)")


@pytest.mark.parametrize("command", [
    ["opt", "{graph}", "-p", "exit-seven"],
    ["compile", "{graph}", "--target", "cpu", "--insert-after", "dce=exit-seven"],
    ["fit", "{graph}", "--target", "cpu", "--vram", "1GiB", "--max-batch", "4", "--jobs", "2",
     "--insert-after", "dce=exit-seven"],
    ["compare", "{graph}", "--jobs", "2", "--insert-after", "dce=exit-seven"],
])
def test_a_pass_that_calls_sys_exit_is_named_with_its_plugin(cli, plugin, small, command):
    module = plugin("exiting_pass", EXITING_PASS)
    code, _, err = cli(*[part.format(graph=small) for part in command], "--plugin", module)
    assert code == 1, err
    assert "pass exit-seven called sys.exit(7) (pass from plugin module 'exiting_pass')" in err


def test_a_pass_that_raises_is_named_with_its_plugin(cli, plugin, small):
    module = plugin("raising_pass", pass_class("raise-key", "raise KeyError('nope')"))
    code, _, err = cli("opt", small, "-p", "raise-key", "--plugin", module)
    assert code == 1
    assert "pass raise-key failed: KeyError: 'nope' (pass from plugin module 'raising_pass')" in err


# --- item 13: names that select nothing, names with other characters -----------------------
@pytest.mark.parametrize("flag", ["--print-before", "--print-after"])
def test_print_flags_name_a_pass_of_the_pipeline(cli, small, flag):
    code, out, err = cli("opt", small, "-p", "dce,cse", flag, "nope")
    assert code == 1 and out == ""
    assert f"{flag} nope: the pipeline has no pass 'nope'" in err and "'all' or one of the pipeline's passes: dce, cse" in err


def test_print_flags_still_take_all_and_pipeline_passes(cli, small):
    code, _, err = cli("opt", small, "-p", "dce,cse", "--print-before", "cse", "--print-after", "all")
    assert code == 0 and "IR before cse" in err and "IR after dce" in err


@pytest.mark.parametrize(("pipeline", "name", "column"), [("dcé", "dcé", 1), ("dce,cs€e", "cs€e", 5),
                                                          ("dce.x", "dce.x", 1)])
def test_a_pass_name_is_reported_whole(cli, small, pipeline, name, column):
    code, _, err = cli("opt", small, "-p", pipeline)
    assert code == 1
    assert f"<pipeline>:1:{column}: pipeline error: unknown pass {name!r}" in err


# --- item 16: stage lines on a terminal; the example with a loss -----------------------------
@pytest.fixture
def terminal(monkeypatch):
    """Stderr that says it is a terminal, and pass lines from the first pass on."""
    monkeypatch.setattr(progress, "on_terminal", lambda: True)
    monkeypatch.setattr(progress, "PASS_LINES_AFTER_SECONDS", 0.0)


def test_opt_names_each_pass_on_a_terminal(cli, small, terminal):
    code, _, err = cli("opt", small, "-p", "dce,cse")
    assert code == 0
    assert "opt: pass 1/2 dce" in err and "opt: pass 2/2 cse" in err


def test_opt_shows_nothing_off_a_terminal(cli, small):
    code, _, err = cli("opt", small, "-p", "dce,cse")
    assert code == 0 and "pass 1/2" not in err


def test_run_target_names_its_stages_on_a_terminal(cli, small, terminal):
    code, _, err = cli("run", small, "--target", "rocm")
    assert code == 0, err
    assert "compiling for rocm: pass 1/" in err and "planning " in err
    assert "running the plan in its arena" in err


def test_training_on_a_graph_without_a_loss_names_the_example_with_one(cli):
    code, _, err = cli("compile", EXAMPLES / "mlp.rlx", "--target", "cpu", "--batch", "2", "--training")
    assert code == 1 and "not a floating-point scalar" in err and "examples/mamba_lm.rlx" in err
