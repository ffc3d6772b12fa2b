"""Fuzzing the command line's surroundings: bytes, streams, models, plugins and paths.

`fuzz.py` mutates what a command reads; this module varies what surrounds a command:

- ``bytes``: text inputs (a graph, a buffer list) with bytes that are not UTF-8;
- ``streams``: standard input closed, standard output full (/dev/full);
- ``onnx-init``: ONNX initializers whose dims disagree with their data, or that hold none;
- ``plugins``: a plugin that exits on import or inside its pass, prints on import, or names
  its pass like a built-in;
- ``alias``: an output that is an input of the same command, or that goes through a link.

Each class is a `FuzzedScenario`: a strategy for one case and a runner that returns a
`CommandRun`. Besides the crashes `CommandRun.crashed` sees, a scenario counts a broken
contract as a crash (exit 3, and a line ``contract broken: ...`` in the output): an input
file changed by the run, a link written through, a misbehaving plugin that leaves rlxir's
exit 0 or unexplained, standard output that is not the JSON asked for. Streams and plugins
run rlxir in a child process (a closed descriptor and a plugin's sys.exit need one).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import attrs
import numpy as np
from hypothesis import strategies as st

from rlxir.testing.fuzz import LOSS_GRAPH, CommandRun, mutated_rlx, run_command, write_input

NON_UTF8 = (b"\xff", b"\xfe", b"\xc3", b"\x80", b"\xe9", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\xc0\xaf")
"""Byte sequences no UTF-8 decoder accepts: stray continuation and lead bytes, surrogates,
overlong forms, Latin-1 letters."""

GOOD_CSV = "id,lower,upper,size\nb0,0,4,16\nb1,2,6,32\n"
SMALL_GRAPH = """graph g(B) {
  input %x : f32[B, 4]
  param %w : f32[4, 4]
  %h = matmul(%x, %w) : f32[B, 4]
  %z = relu(%h) : f32[B, 4]
  output %z
}
"""


@attrs.frozen
class FuzzedScenario:
    """One class of hostile surroundings: what is drawn, and how a drawn case runs."""

    name: str
    inputs: st.SearchStrategy
    runner: Callable[[object], CommandRun]

    def run_on(self, case) -> CommandRun:
        """Run one drawn case in a scratch folder of its own."""
        return self.runner(case)


def broken(run: CommandRun, why: str) -> CommandRun:
    """`run` counted as a crash: a contract held by no exit code was broken."""
    return CommandRun(run.arguments, 3, f"{run.output}\ncontract broken: {why}")


def run_child(arguments: list[str], scratch: Path, stdin_closed: bool = False, stdout_full: bool = False,
              environment: dict | None = None) -> tuple[CommandRun, str]:
    """Run ``rlxir ARGUMENTS`` in a child process, in `scratch`, with the streams asked for:
    (the run, its standard output alone)."""
    command = [sys.executable, "-m", "rlxir", *arguments]
    with open("/dev/full" if stdout_full else os.devnull, "w") as full:
        child = subprocess.run(command, cwd=scratch, stdin=subprocess.DEVNULL,
                               stdout=full if stdout_full else subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=120, env={**os.environ, **(environment or {})},
                               preexec_fn=(lambda: os.close(0)) if stdin_closed else None)
    standard_output = (child.stdout or b"").decode("utf-8", "replace")
    output = standard_output + child.stderr.decode("utf-8", "replace")
    return CommandRun(tuple(arguments), child.returncode, output), standard_output


# --- bytes --------------------------------------------------------------------------------
@st.composite
def non_utf8_inputs(draw, texts) -> tuple[str, bytes]:
    """(command, bytes): a graph or a buffer list with non-UTF-8 bytes spliced in (for
    ``opt --pipeline``, the pipeline argument is made of the bytes)."""
    command = draw(st.sampled_from(("check", "print", "opt", "opt --pipeline", "compile", "run", "grad", "plan-csv")))
    text = GOOD_CSV if command == "plan-csv" else draw(mutated_rlx(texts, max_mutations=1))
    data = text.encode("utf-8", errors="replace")
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from(NON_UTF8)) + data[at:]
    return command, data


def run_non_utf8(case: tuple[str, bytes]) -> CommandRun:
    command, data = case
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        if command == "opt --pipeline":  # the bytes in a command-line argument, as the OS hands them over
            pipeline = os.fsdecode(b"dce," + data[:12])
            return run_command(["opt", str(write_input(folder, "g.rlx", SMALL_GRAPH)), "--pipeline", pipeline,
                                "-o", str(folder / "opt.rlx")])
        path = write_input(folder, "input.csv" if command == "plan-csv" else "input.rlx", data)
        extra = {"opt": ["--pipeline", "dce", "-o", str(folder / "opt.rlx")], "grad": ["-o", str(folder / "grad.rlx")],
                 "compile": ["-t", "cpu", "--batch", "1"], "run": ["--batch", "1"]}.get(command, [])
        return run_command([command, str(path), *extra])


# --- streams ------------------------------------------------------------------------------
STREAM_COMMANDS = {
    "check -": ["check", "-"],
    "print": ["print", "g.rlx"],
    "print -": ["print", "-"],
    "compile --json": ["compile", "g.rlx", "-t", "cpu", "--batch", "1", "--json"],
    "plan-csv": ["plan-csv", "b.csv"],
    "opt -o -": ["opt", "g.rlx", "--pipeline", "dce", "-o", "-"],
}


@st.composite
def stream_cases(draw) -> tuple[str, bool, bool]:
    """(command, standard input closed, standard output full), at least one of the two."""
    command = draw(st.sampled_from(sorted(STREAM_COMMANDS)))
    closed, full = draw(st.sampled_from(((True, False), (False, True), (True, True))))
    return command, closed, full


def run_streams(case: tuple[str, bool, bool]) -> CommandRun:
    command, stdin_closed, stdout_full = case
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "g.rlx").write_text(SMALL_GRAPH)
        (folder / "b.csv").write_text(GOOD_CSV)
        run, _ = run_child(STREAM_COMMANDS[command], folder, stdin_closed, stdout_full)
    reads_stdin = "-" in STREAM_COMMANDS[command][:2]
    if run.code == 0 and (stdout_full or (stdin_closed and reads_stdin)):
        return broken(run, "exit 0 though its standard output was lost or its standard input was closed")
    return run


# --- onnx-init ----------------------------------------------------------------------------
@st.composite
def initializer_models(draw) -> bytes:
    """A model x @ w + b whose initializers declare dims their data often does not fill."""
    from onnx import TensorProto, helper

    def initializer(name: str, dims: list[int]) -> TensorProto:
        declared = [draw(st.sampled_from((dim, 0, 1, 2, 16, 2 ** 40))) for dim in dims] if draw(st.booleans()) else dims
        count = draw(st.sampled_from((int(np.prod(dims)), 0, 1, 16, int(np.prod(dims)) + 3)))
        tensor = TensorProto(name=name, data_type=TensorProto.FLOAT)
        tensor.dims.extend(declared)
        values = np.ones(count, np.float32)
        if draw(st.booleans()):
            tensor.raw_data = values.tobytes()[: draw(st.sampled_from((4 * count, max(4 * count - 1, 0))))]
        else:
            tensor.float_data.extend(values.tolist())
        return tensor

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"])]
    graph = helper.make_graph(nodes, "g", [x], [y], [initializer("w", [4, 4]), initializer("b", [4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def run_initializers(data: bytes) -> CommandRun:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        path = write_input(folder, "model.onnx", data)
        return run_command(["import", str(path), "-o", str(folder / "out.rlx")])


# --- plugins ------------------------------------------------------------------------------
PASS_TEMPLATE = '''
import attrs
from rlxir.pass_machinery.pass_base import Pass, register_pass

@register_pass
@attrs.frozen
class Misbehaving(Pass):
    """A pass that {what}."""

    name = "{name}"

    def run(self, graph, ctx):
        {body}
        return False
'''
PLUGINS = {
    "exit 0 on import": "import sys\nsys.exit(0)\n",
    "exit 5 on import": "import sys\nsys.exit(5)\n",
    "print on import": "print('hello from the plugin')\n" + PASS_TEMPLATE.format(what="does nothing",
                                                                                name="fuzz-noop", body="pass"),
    "exit 7 in its pass": "import sys\n" + PASS_TEMPLATE.format(what="exits", name="fuzz-noop", body="sys.exit(7)"),
    "a pass named dce": PASS_TEMPLATE.format(what="takes a built-in's name", name="dce", body="pass"),
}
PLUGIN_COMMANDS = {
    "passes": ["passes"],
    "opt": ["opt", "g.rlx", "--pipeline", "fuzz-noop,dce", "-o", "out.rlx"],
    "compile --json": ["compile", "g.rlx", "-t", "cpu", "--batch", "1", "--json", "--insert-after", "dce=fuzz-noop"],
}


@st.composite
def plugin_cases(draw) -> tuple[str, str]:
    """(plugin behaviour, command)."""
    return draw(st.sampled_from(sorted(PLUGINS))), draw(st.sampled_from(sorted(PLUGIN_COMMANDS)))


def run_plugin(case: tuple[str, str]) -> CommandRun:
    behaviour, command = case
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "g.rlx").write_text(SMALL_GRAPH)
        (folder / "fuzz_plugin.py").write_text(PLUGINS[behaviour])
        arguments = [*PLUGIN_COMMANDS[command], "--plugin", "fuzz_plugin"]
        run, standard_output = run_child(arguments, folder, environment={"PYTHONPATH": scratch})
    return plugin_verdict(behaviour, command, run, standard_output)


def plugin_verdict(behaviour: str, command: str, run: CommandRun, standard_output: str) -> CommandRun:
    """`run` as it is, or broken: a plugin that exits (on import, or in a pass the command
    runs) or takes a built-in's name must end in exit 1 naming it; a plugin's print must stay
    off --json standard output."""
    if behaviour == "print on import":
        if command.endswith("--json") and run.code == 0 and not _parses_as_json(standard_output):
            return broken(run, "--json standard output does not parse as JSON (the plugin printed on it)")
        return run
    if behaviour == "exit 7 in its pass" and command == "passes":
        return run
    if run.code != 1:
        return broken(run, f"a plugin that does '{behaviour}' left exit {run.code}")
    if not any(name in run.output for name in ("fuzz_plugin", "fuzz-noop", "'dce'")):
        return broken(run, "the error does not name the plugin or its pass")
    return run


def _parses_as_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


# --- alias --------------------------------------------------------------------------------
ALIAS_CASES = ("run -o holds the input", "run -o holds a link", "opt -o is the input", "print -o is the input",
               "grad -o is a link", "import --weights holds a link")


def run_alias(case: str) -> CommandRun:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        graph, io, elsewhere = folder / "g.rlx", folder / "io", folder / "elsewhere.txt"
        graph.write_text(SMALL_GRAPH)
        io.mkdir()
        elsewhere.write_text("not to be written\n")
        np.save(io / "z.npy", np.ones((1, 4), np.float32))
        arguments = _alias_arguments(case, folder, graph, io, elsewhere)
        if arguments is None:
            return CommandRun((case,), 0, "the onnx package is not installed")
        inputs = [path for path in (*io.iterdir(), graph) if not path.is_symlink()]
        watched = {path: path.read_bytes() for path in (*inputs, elsewhere)}
        run = run_command(arguments)
        changed = [path.name for path, data in watched.items() if path.read_bytes() != data]
    if changed:
        return broken(run, f"{', '.join(changed)} was written by the run")
    return run


def _alias_arguments(case: str, folder: Path, graph: Path, io: Path, elsewhere: Path) -> list[str] | None:
    if case == "run -o holds the input":
        return ["run", str(graph), "--batch", "1", "-i", f"x={io / 'z.npy'}", "-o", str(io)]
    if case == "run -o holds a link":
        (io / "z.npy").rename(io / "x.npy")
        os.symlink(elsewhere, io / "z.npy")  # the output %z's file
        return ["run", str(graph), "--batch", "1", "-i", f"x={io / 'x.npy'}", "-o", str(io)]
    if case == "opt -o is the input":
        return ["opt", str(graph), "--pipeline", "dce", "-o", str(graph)]
    if case == "print -o is the input":
        return ["print", str(graph), "-o", str(graph)]
    if case == "grad -o is a link":
        graph.write_text(LOSS_GRAPH)
        os.symlink(elsewhere, folder / "grad.rlx")
        return ["grad", str(graph), "-o", str(folder / "grad.rlx")]
    try:
        from onnx import TensorProto, helper
    except ModuleNotFoundError:
        return None
    weight = helper.make_tensor("w", TensorProto.FLOAT, [4, 4], np.ones(16, np.float32).tolist())
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g", [x], [y], [weight])
    (folder / "m.onnx").write_bytes(helper.make_model(model).SerializeToString())
    for name in ("w", "w.npy", "weights.npz", "g.npz"):
        os.symlink(elsewhere, io / name)
    return ["import", str(folder / "m.onnx"), "--weights", str(io), "-o", str(folder / "m.rlx")]


def hostile_scenarios(texts) -> list[FuzzedScenario]:
    """Every class of hostile surroundings, for bench/fuzz.py."""
    scenarios = [
        FuzzedScenario("bytes", non_utf8_inputs(texts), run_non_utf8),
        FuzzedScenario("streams", stream_cases(), run_streams),
        FuzzedScenario("plugins", plugin_cases(), run_plugin),
        FuzzedScenario("alias", st.sampled_from(ALIAS_CASES), run_alias),
    ]
    try:
        import onnx  # noqa: F401 - only whether it is installed
    except ModuleNotFoundError:
        return scenarios
    return [*scenarios, FuzzedScenario("onnx-init", initializer_models(), run_initializers)]
