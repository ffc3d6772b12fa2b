"""Fuzzing the command line: hypothesis strategies for hostile inputs, and a checked runner.

Every command must answer every input with a result or a located, explained error — never
a traceback and never "internal error". `mutated_rlx` takes an example graph and breaks it
(characters, tokens, numbers, names and lines dropped, swapped or replaced); `hostile_csv`
writes buffer lists for `plan-csv` with wrong headers, cells and intervals. `run_command`
runs one command in-process and reports the output when it is a crash.

The suite runs a few examples per command (tests/fuzz/); bench/fuzz.py runs the same
strategies for longer and counts.
"""

from __future__ import annotations

import contextlib
import io
import re
import tempfile
import traceback
from collections.abc import Sequence
from pathlib import Path

import attrs
from hypothesis import strategies as st

CRASH_MARKERS = ("internal error", "Traceback")
# How a pass's own bug (an exception other than an RlxError) reaches the user.
_PASS_BUG = re.compile(r"pass \S+ failed: [A-Za-z_.]*(?:Error|Exception)\b")

# Tokens the grammar knows, and some it does not: mutations splice these in.
_TOKENS = ("%", "%x", "{", "}", "(", ")", "[", "]", ",", "=", ":", "-", "#", "\n", " ", '"', "//", "*", "+",
           "input", "param", "const", "output", "graph", "f32", "bf16", "i64", "bool", "matmul", "add", "softmax",
           "reshape", "{axis = 9}", "{shape = [-1, -1]}", "{fill_limit = 3}", "{fill_sign = \"positive\"}",
           "B", "S", "-1", "0", "1e40", "nan", "inf", "true", "\t", "\x00", "é", "%h.1")
# Numbers a mutation writes: small ones only, so no run allocates more than a few MB.
_NUMBERS = ("0", "1", "2", "3", "7", "16", "-1", "-3", "64", "0.5", "-0.0", "1e-9")
# Numbers for commands that allocate nothing (check, print, opt): any size.
_HUGE_NUMBERS = _NUMBERS + ("99999999999", "18446744073709551616", "340282366920938463463374607431768211456")

_NUMBER = re.compile(r"(?<![A-Za-z_.%])\d+(?:\.\d+)?")
_NAME = re.compile(r"%[A-Za-z0-9_.]+")


@st.composite
def mutated_rlx(draw, texts: Sequence[str], huge_numbers: bool = False, max_mutations: int = 3) -> str:
    """One of `texts` with 1..`max_mutations` random mutations applied."""
    text = draw(st.sampled_from(list(texts)))
    for _ in range(draw(st.integers(1, max_mutations))):
        mutation = draw(st.sampled_from(_MUTATIONS))
        text = mutation(draw, text, huge_numbers)
    return text


def _splice_token(draw, text: str, huge_numbers: bool) -> str:
    at = draw(st.integers(0, len(text)))
    return text[:at] + draw(st.sampled_from(_TOKENS)) + text[at:]


def _delete_span(draw, text: str, huge_numbers: bool) -> str:
    if not text:
        return text
    start = draw(st.integers(0, len(text) - 1))
    return text[:start] + text[start + draw(st.integers(1, 12)):]


def _replace_number(draw, text: str, huge_numbers: bool) -> str:
    matches = list(_NUMBER.finditer(text))
    if not matches:
        return text
    match = draw(st.sampled_from(matches))
    number = draw(st.sampled_from(_HUGE_NUMBERS if huge_numbers else _NUMBERS))
    return text[:match.start()] + number + text[match.end():]


def _replace_name(draw, text: str, huge_numbers: bool) -> str:
    names = sorted(set(_NAME.findall(text)))
    if len(names) < 2:
        return text
    old, new = draw(st.sampled_from(names)), draw(st.sampled_from(names))
    occurrences = [match.start() for match in re.finditer(re.escape(old) + r"(?![A-Za-z0-9_.])", text)]
    at = draw(st.sampled_from(occurrences))
    return text[:at] + new + text[at + len(old):]


def _edit_lines(draw, text: str, huge_numbers: bool) -> str:
    lines = text.split("\n")
    first, second = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
    edit = draw(st.sampled_from(("drop", "duplicate", "swap")))
    if edit == "drop":
        del lines[first]
    elif edit == "duplicate":
        lines.insert(second, lines[first])
    else:
        lines[first], lines[second] = lines[second], lines[first]
    return "\n".join(lines)


# Number and name swaps mostly keep the text parseable, so they reach the later stages
# (types, passes, planning, the interpreter): they are drawn more often.
_MUTATIONS = (_replace_number, _replace_number, _replace_number, _replace_name, _replace_name, _splice_token,
              _delete_span, _edit_lines)

_CELLS = st.one_of(st.integers(-5, 40).map(str), st.sampled_from(("", " ", "x", "1.5", "-0", "1e3", "9" * 30,
                                                                  "\"3\"", "b1", "nan")))
_COLUMNS = ("id", "lower", "upper", "size", "offset", "alignment", "start", "end", "hint", "")


@st.composite
def hostile_csv(draw, max_rows: int = 12) -> str:
    """A buffer list in MiniMalloc's CSV shape, often broken: odd headers, cells, intervals."""
    if draw(st.booleans()):
        header = ["id", "lower", "upper", "size"]
    else:
        header = draw(st.lists(st.sampled_from(_COLUMNS), min_size=0, max_size=6))
    rows = []
    for index in range(draw(st.integers(0, max_rows))):
        if draw(st.integers(0, 3)) == 0:
            rows.append(draw(st.lists(_CELLS, min_size=0, max_size=len(header) + 2)))
            continue
        lower = draw(st.integers(0, 30))
        upper = lower + draw(st.integers(-2, 10))
        rows.append([f"b{index}", str(lower), str(upper), str(draw(st.integers(-1, 64)))][:len(header)])
    separator = draw(st.sampled_from((",", ",", ";", "\t")))
    return "\n".join(separator.join(row) for row in [header, *rows]) + draw(st.sampled_from(("\n", "", "\r\n")))


@attrs.frozen
class CommandRun:
    """One in-process run of the CLI: its exit code and everything it printed."""

    arguments: tuple[str, ...]
    code: int
    output: str

    @property
    def crashed(self) -> bool:
        """An exception escaped, or the output shows an internal error, a traceback or a
        pass that failed with an exception of its own."""
        return (self.code == 3 or any(marker in self.output for marker in CRASH_MARKERS)
                or _PASS_BUG.search(self.output) is not None)


def run_command(arguments: Sequence[str]) -> CommandRun:
    """Run ``rlxir ARGUMENTS`` in this process; an exception escaping `main` is a crash."""
    from rlxir.cli.main import main  # the CLI imports every command module: only when used

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = main(list(arguments))
        except SystemExit as exit_:  # argparse's usage errors
            code = exit_.code if isinstance(exit_.code, int) else 2
        except Exception:  # noqa: BLE001 - an exception escaping main is the defect looked for
            traceback.print_exc(file=stderr)
            code = 3
    return CommandRun(tuple(arguments), code or 0, stdout.getvalue() + stderr.getvalue())


def write_input(folder: Path, name: str, data: str | bytes) -> Path:
    """`data` as a file in `folder` (characters UTF-8 cannot encode are replaced)."""
    path = folder / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", errors="replace"))
    return path


# --- what is fuzzed -------------------------------------------------------------------------
SEED_EXAMPLES = ("mlp.rlx", "gpt2_block.rlx", "mamba_block.rlx")
_SYMBOL_S = re.compile(r"^graph [A-Za-z0-9_.]+\([^)]*\bS\b", re.MULTILINE)


def seed_texts(repository: Path, max_chars: int = 4000) -> list[str]:
    """The graphs mutations start from: small examples and the pass goldens' files."""
    paths = [repository / "examples" / name for name in SEED_EXAMPLES]
    paths += sorted((repository / "tests" / "golden" / "passes").glob("*/*.rlx"))
    texts = [path.read_text(encoding="utf-8") for path in paths if path.is_file()]
    return [text for text in texts if len(text) <= max_chars]


# A graph with a scalar loss, so that `grad` has something to differentiate.
LOSS_GRAPH = """graph regression(B) {
  input %x : f32[B, 8]
  input %target : f32[B, 4]
  param %w1 : f32[8, 16]
  param %b1 : f32[16]
  param %w2 : f32[16, 4]
  %h = linear(%x, %w1, %b1) : f32[B, 16]
  %a = gelu(%h) : f32[B, 16]
  %y = matmul(%a, %w2) : f32[B, 4]
  %d = sub(%y, %target) : f32[B, 4]
  %e = mul(%d, %d) : f32[B, 4]
  %loss = reduce_mean(%e) {axes = [0, 1]} : f32[]
  output %loss
}
"""


def _bindings(text: str) -> list[str]:
    """Small sizes for the symbols a run or a compile needs (the batch, a sequence length)."""
    return ["--batch", "1", *(["-D", "S=4"] if _SYMBOL_S.search(text) else [])]


@attrs.frozen
class FuzzedCommand:
    """A command, the inputs it is fuzzed with, and its command line for one input file."""

    name: str
    inputs: st.SearchStrategy
    suffix: str
    arguments: object  # (path, text, scratch folder) -> list[str]

    def run_on(self, text: str) -> CommandRun:
        """Run the command on TEXT, written as its input file in a scratch folder of its own."""
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch)
            path = write_input(folder, "input" + self.suffix, text)
            return run_command(self.arguments(path, text, folder))  # type: ignore[operator]


def fuzzed_commands(texts: Sequence[str]) -> list[FuzzedCommand]:
    """Every command fuzzed: check, print, opt, compile, run, grad (mutated .rlx), plan-csv,
    and import (random ONNX models) where the onnx package is installed."""
    any_size, small = mutated_rlx(texts, huge_numbers=True), mutated_rlx(texts)
    return [
        FuzzedCommand("check", any_size, ".rlx", lambda path, text, scratch: ["check", str(path)]),
        FuzzedCommand("print", any_size, ".rlx", lambda path, text, scratch: ["print", str(path)]),
        FuzzedCommand("opt", small, ".rlx", lambda path, text, scratch: [
            "opt", str(path), "--pipeline", "unfuse,simplify,cse,fuse,dce", "--target", "cuda",
            "--reproducer-dir", str(scratch), "-o", str(scratch / "opt.rlx")]),
        FuzzedCommand("compile", small, ".rlx", lambda path, text, scratch: [
            "compile", str(path), "--target", "rocm", *_bindings(text)]),
        FuzzedCommand("run", small, ".rlx", lambda path, text, scratch: ["run", str(path), *_bindings(text)]),
        FuzzedCommand("grad", mutated_rlx([LOSS_GRAPH]), ".rlx", lambda path, text, scratch: [
            "grad", str(path), "-o", str(scratch / "grad.rlx")]),
        FuzzedCommand("plan-csv", hostile_csv(), ".csv", lambda path, text, scratch: [
            "plan-csv", str(path), "--planner", "liveness"]),
        *_import_command(),
    ]


def _import_command() -> list[FuzzedCommand]:
    try:
        from rlxir.testing.fuzz_onnx import onnx_models
    except ModuleNotFoundError:  # the onnx extra is not installed: nothing to import with
        return []
    return [FuzzedCommand("import", onnx_models(), ".onnx", lambda path, data, scratch: ["import", str(path)])]
