"""Instruments: hooks run around every pass of a pipeline.

Verifying, timing, printing, dumping and reproducing are configured here, apart from the
passes themselves (which know nothing of them). An instrument may define any of
``before_pass(index, entry, graph, ctx)``, ``after_pass(index, entry, graph, ctx, changed,
seconds)``, ``on_failure(index, entry, graph, ctx, error)`` and ``finish(graph, ctx)``;
`Instrument` provides no-op defaults.
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from collections.abc import Collection
from pathlib import Path
from typing import TextIO

from rlxir.errors import RlxError, VerifyError
from rlxir.ir.graph import Graph
from rlxir.ir.interface import Interface
from rlxir.pass_machinery.pass_base import PassContext, PassEntry, check_interface_kept
from rlxir.ir.printer import print_graph
from rlxir.ir.verifier import verify


class Instrument:
    """No-op hooks; subclasses override what they need."""

    def before_pass(self, index: int, entry: PassEntry, graph: Graph, ctx: PassContext) -> None:
        return None

    def after_pass(self, index: int, entry: PassEntry, graph: Graph, ctx: PassContext, changed: bool,
                   seconds: float) -> None:
        return None

    def on_failure(self, index: int, entry: PassEntry, graph: Graph, ctx: PassContext,
                   error: Exception) -> None:
        return None

    def finish(self, graph: Graph, ctx: PassContext) -> None:
        return None


def _fingerprint(graph: Graph) -> str:
    return hashlib.sha256(print_graph(graph).encode()).hexdigest()


class VerifyEach(Instrument):
    """Verify the graph after every pass, and check each pass's claim to have changed it.

    A pass that returns False but changed the printed graph (or True without changing it,
    when `strict_claims`) is reported as a `VerifyError` naming the pass. A pass that
    changed the graph's interface (input, param or output names, order or types) is
    reported as a `PassError` naming the pass and each change.
    """

    def __init__(self, check_claims: bool = True, strict_claims: bool = False):
        self.check_claims = check_claims
        self.strict_claims = strict_claims
        self._before: str | None = None
        self._interface: Interface | None = None

    def before_pass(self, index: int, entry: PassEntry, graph: Graph, ctx: PassContext) -> None:
        self._interface = Interface.of(graph)
        if self.check_claims:
            self._before = _fingerprint(graph)

    def after_pass(self, index: int, entry: PassEntry, graph: Graph, ctx: PassContext, changed: bool,
                   seconds: float) -> None:
        try:
            verify(graph)
        except VerifyError as error:
            raise VerifyError(f"after pass {entry.text()}: {error.message}", error.loc, error.expected) from None
        self._check_interface(entry, graph)
        if not self.check_claims:
            return
        actually_changed = _fingerprint(graph) != self._before
        if actually_changed and not changed:
            raise VerifyError(f"pass {entry.name} changed the graph but returned False")
        if self.strict_claims and changed and not actually_changed:
            raise VerifyError(f"pass {entry.name} returned True but left the graph unchanged")


    def _check_interface(self, entry: PassEntry, graph: Graph) -> None:
        """The pass runner's own check (`rlxir.pass_machinery.pass_base.check_interface_kept`), for a caller
        that drives the instrument around a pass itself."""
        if self._interface is not None:
            check_interface_kept(entry, graph, self._interface)


class TimePasses(Instrument):
    """Collect each pass's seconds and node counts; `table()` formats them."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream
        self.rows: list[tuple[str, float, int, int, bool]] = []
        self._nodes_before = 0

    def before_pass(self, index: int, entry: PassEntry, graph: Graph, ctx: PassContext) -> None:
        self._nodes_before = len(graph)

    def after_pass(self, index: int, entry: PassEntry, graph: Graph, ctx: PassContext, changed: bool,
                   seconds: float) -> None:
        self.rows.append((entry.text(), seconds, self._nodes_before, len(graph), changed))

    def table(self) -> str:
        total = sum(row[1] for row in self.rows) or 1e-12
        width = max([len(row[0]) for row in self.rows] + [4])
        lines = [f"{'pass':<{width}}  {'seconds':>9}  {'share':>6}  {'nodes in':>9}  {'nodes out':>9}  changed",
                 "-" * (width + 52)]
        for name, seconds, before, after, changed in self.rows:
            lines.append(f"{name:<{width}}  {seconds:>9.4f}  {seconds / total:>6.1%}  {before:>9}  {after:>9}  "
                         f"{'yes' if changed else 'no'}")
        lines.append(f"{'total':<{width}}  {sum(row[1] for row in self.rows):>9.4f}")
        return "\n".join(lines)

    def finish(self, graph: Graph, ctx: PassContext) -> None:
        if self.stream is not None:
            print(self.table(), file=self.stream)


def _selected(names: Collection[str] | str | None, pass_name: str) -> bool:
    if names is None:
        return False
    if names == "all" or (not isinstance(names, str) and "all" in names):
        return True
    return pass_name in ([names] if isinstance(names, str) else names)


class PrintIR(Instrument):
    """Print the IR before and/or after chosen passes (names, or "all").

    With `only_changed`, the after-print happens only when the pass changed the graph.
    """

    def __init__(self, before: Collection[str] | str | None = None, after: Collection[str] | str | None = None,
                 only_changed: bool = False, stream: TextIO | None = None):
        self.before = before
        self.after = after
        self.only_changed = only_changed
        self.stream = stream

    def _out(self) -> TextIO:
        return self.stream or sys.stdout

    def before_pass(self, index: int, entry: PassEntry, graph: Graph, ctx: PassContext) -> None:
        if _selected(self.before, entry.name):
            print(f"// ----- IR before {entry.text()} -----", file=self._out())
            print(print_graph(graph), file=self._out())

    def after_pass(self, index: int, entry: PassEntry, graph: Graph, ctx: PassContext, changed: bool,
                   seconds: float) -> None:
        if not _selected(self.after, entry.name) or (self.only_changed and not changed):
            return
        print(f"// ----- IR after {entry.text()}{'' if changed else ' (unchanged)'} -----", file=self._out())
        print(print_graph(graph), file=self._out())


class DumpStages(Instrument):
    """Write the graph after each pass to `folder/NNN-<pass>.rlx` (000-input.rlx first)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.written: list[Path] = []

    def _write(self, name: str, graph: Graph) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / name
        path.write_text(print_graph(graph), encoding="utf-8")
        self.written.append(path)

    def before_pass(self, index: int, entry: PassEntry, graph: Graph, ctx: PassContext) -> None:
        if index == 0:
            self._write("000-input.rlx", graph)

    def after_pass(self, index: int, entry: PassEntry, graph: Graph, ctx: PassContext, changed: bool,
                   seconds: float) -> None:
        self._write(f"{index + 1:03d}-{entry.name}.rlx", graph)


class Reproducer(Instrument):
    """On a pass failure, write the IR as it was right before that pass, with the
    pipeline in a header comment, and print the file's path once.

    It keeps a copy of the graph before each pass, which costs a graph copy per pass.
    """

    def __init__(self, pipeline_text: str, folder: str | Path | None = None, stream: TextIO | None = None):
        self.pipeline_text = pipeline_text
        self.folder = Path(folder) if folder else None
        self.stream = stream
        self.path: Path | None = None
        self._snapshot: Graph | None = None

    def before_pass(self, index: int, entry: PassEntry, graph: Graph, ctx: PassContext) -> None:
        self._snapshot = graph.copy()

    def on_failure(self, index: int, entry: PassEntry, graph: Graph, ctx: PassContext,
                   error: Exception) -> None:
        if self.path is not None or self._snapshot is None:
            return
        folder = self.folder or Path(tempfile.mkdtemp(prefix="rlxir-repro-"))
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"reproducer-{entry.name}.rlx"
        reason = error.message if isinstance(error, RlxError) else f"{type(error).__name__}: {error}"
        header = (f"# rlxir reproducer: pass {entry.text()} (#{index + 1}) failed: {reason.splitlines()[0]}\n"
                  f"# pipeline: {self.pipeline_text}\n"
                  f"# rerun: rlxir opt {self.path.name} --pipeline '{entry.text()}'\n")
        self.path.write_text(header + print_graph(self._snapshot), encoding="utf-8")
        print(f"rlxir: reproducer written to {self.path}", file=self.stream or sys.stderr)
