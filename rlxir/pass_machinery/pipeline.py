"""Pipelines: ordered, configured passes, written as text and run over a graph.

Text form: ``"unfuse,legalize-or-rewrite{target=rocm},fuse{max-region=32},dce"`` — pass
names separated by commas, each with an optional ``{option=value, ...}`` block (options
in kebab-case; commas or spaces separate them). `Pipeline.text()` prints the same form
back: the options a spec wrote (in its order), nothing else.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from rlxir.errors import Location, RlxError, SourceText, close_names
from rlxir.gcpause import no_collections
from rlxir.ir.graph import Graph
from rlxir.ir.interface import Interface, keep_output_names
from rlxir.pass_machinery.pass_base import (Pass, PassContext, PassEntry, PassStat, available_passes,
                                           check_interface_kept, entry_point_problems, get_pass, option_text_name,
                                           plugin_module_of)

if TYPE_CHECKING:
    from rlxir.pass_machinery.instruments import Instrument


class PipelineError(RlxError):
    """A bad pipeline spec: unknown pass or option, bad value, broken ordering."""

    kind = "pipeline error"


class Pipeline:
    """An ordered list of configured passes. Ordering declared by passes is checked here."""

    def __init__(self, entries: Iterable[PassEntry] = ()):
        self.entries: list[PassEntry] = list(entries)
        check_ordering(self.entries)

    @classmethod
    def parse(cls, spec: str) -> Pipeline:
        return cls(parse_entries(spec))

    def text(self) -> str:
        return ",".join(entry.text() for entry in self.entries)

    __str__ = text

    def __repr__(self) -> str:
        return f"Pipeline({self.text()!r})"

    def __iter__(self) -> Iterator[PassEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def names(self) -> list[str]:
        return [entry.name for entry in self.entries]

    def _index_of(self, name: str, last: bool = False) -> int:
        indices = [index for index, entry in enumerate(self.entries) if entry.name == name]
        if not indices:
            raise PipelineError(f"pipeline has no pass {name!r}", expected="one of: " + ", ".join(self.names()))
        return indices[-1] if last else indices[0]

    def _with(self, index: int, added: Pipeline | str | Pass) -> Pipeline:
        new_entries = _entries_of(added)
        return Pipeline(self.entries[:index] + new_entries + self.entries[index:])

    def insert_before(self, anchor: str, added: Pipeline | str | Pass) -> Pipeline:
        """A new pipeline with `added` (spec text, a pass, or a pipeline) before the first `anchor`."""
        return self._with(self._index_of(anchor), added)

    def insert_after(self, anchor: str, added: Pipeline | str | Pass, last: bool = False) -> Pipeline:
        """A new pipeline with `added` after the first (or `last`) occurrence of `anchor`."""
        return self._with(self._index_of(anchor, last) + 1, added)

    def without(self, name: str) -> Pipeline:
        return Pipeline(entry for entry in self.entries if entry.name != name)

    def run(self, graph: Graph, ctx: PassContext | None = None, instruments: Sequence[Instrument] = ()) -> Graph:
        """Run every pass on `graph` in place (see `run_pipeline` for a copying variant)."""
        ctx = ctx or PassContext()
        with no_collections():
            interface = None
            for index, entry in enumerate(self.entries):
                # Without instruments nothing touches the graph between two passes, so the
                # interface checked after one pass is the one the next starts from (a walk
                # over every input and param saved per pass).
                interface = _run_one(index, entry, graph, ctx, instruments, None if instruments else interface)
        for instrument in instruments:
            finish = getattr(instrument, "finish", None)
            if finish is not None:
                finish(graph, ctx)
        return graph


def _entries_of(added: Pipeline | str | Pass) -> list[PassEntry]:
    if isinstance(added, Pipeline):
        return list(added.entries)
    if isinstance(added, str):
        return parse_entries(added)
    return [PassEntry(added, tuple(added.non_default_options().items()))]


def _run_one(index: int, entry: PassEntry, graph: Graph, ctx: PassContext,
             instruments: Sequence[Instrument], interface_before: Interface | None = None) -> Interface:
    """Run one pass and check it; returns the graph's interface after it. `interface_before`,
    when given, is the graph's interface now (taken after the previous pass)."""
    for instrument in instruments:
        instrument.before_pass(index, entry, graph, ctx)
    nodes_before = len(graph)
    output_names = list(graph.outputs)
    if interface_before is None:
        interface_before = Interface.of(graph)
    start = time.perf_counter()
    try:
        try:
            changed = entry.instance.run(graph, ctx)
        except SystemExit as stop:  # a pass may not end the process; its caller reports it
            raise PassFailure(entry.name, stop, plugin_module_of(type(entry.instance))) from None
        # A rewrite that replaced an output's producer gives the new value the output's name.
        keep_output_names(graph, output_names)
        interface_after = check_interface_kept(entry, graph, interface_before)
    except Exception as error:
        for instrument in instruments:
            instrument.on_failure(index, entry, graph, ctx, error)
        if isinstance(error, RlxError):
            raise
        raise PassFailure(entry.name, error, plugin_module_of(type(entry.instance))) from error
    seconds = time.perf_counter() - start
    ctx.stats.append(PassStat(index, entry.text(), nodes_before, len(graph), seconds, bool(changed)))
    for instrument in instruments:
        instrument.after_pass(index, entry, graph, ctx, bool(changed), seconds)
    return interface_after


class PassFailure(RlxError):
    """A pass raised something other than an `RlxError` (or called sys.exit): a bug in that
    pass, named with its plugin module when it comes from one."""

    def __init__(self, pass_name: str, error: BaseException, plugin_module: str | None = None):
        what = (f"called sys.exit({error.code!r})" if isinstance(error, SystemExit)
                else f"failed: {type(error).__name__}: {error}")
        source = f" (pass from plugin module {plugin_module!r})" if plugin_module else ""
        super().__init__(f"pass {pass_name} {what}{source}")
        self.pass_name = pass_name
        self.original = error


def run_pipeline(graph: Graph, spec: str | Pipeline, instruments: Sequence[Instrument] = (),
                 ctx: PassContext | None = None, copy: bool = True) -> Graph:
    """Run a pipeline (text or `Pipeline`) and return the resulting graph.

    The input graph is left untouched unless `copy=False`. Instruments hook around every
    pass (`rlxir.pass_machinery.instruments`).
    """
    pipeline = spec if isinstance(spec, Pipeline) else Pipeline.parse(spec)
    work = graph.copy() if copy else graph
    return pipeline.run(work, ctx, instruments)


def parse_pipeline(spec: str) -> Pipeline:
    """Parse pipeline text; errors are `PipelineError`s with a caret at the bad name/option."""
    return Pipeline.parse(spec)


# --- text -------------------------------------------------------------------------------
# A name runs to the next space, comma or brace, so that 'dcé' is reported whole.
_ITEM = re.compile(r"\s*([^\s,{}]+)\s*(\{[^{}]*\})?\s*")


def _error(spec: str, offset: int, message: str, expected: str | None = None) -> PipelineError:
    source = SourceText("<pipeline>", spec)
    return PipelineError(message, Location("<pipeline>", 1, offset + 1, source), expected)


def parse_entries(spec: str) -> list[PassEntry]:
    if "\n" in spec:
        spec = spec.replace("\n", " ")
    entries: list[PassEntry] = []
    position = 0
    if not spec.strip():
        return entries
    while True:
        match = _ITEM.match(spec, position)
        if match is None or not match.group(1):
            raise _error(spec, position, "expected a pass name", "a pass name like dce or fuse{max-region=32}")
        entries.append(_entry(spec, match))
        position = match.end()
        if position == len(spec):
            return entries
        if spec[position] != ",":
            raise _error(spec, position, f"unexpected {spec[position]!r} after pass {match.group(1)}",
                         "',' between passes")
        position += 1


def _entry(spec: str, match: re.Match) -> PassEntry:
    name = match.group(1)
    cls = get_pass(name) if re.fullmatch(r"[A-Za-z0-9_-]+", name) else None
    if cls is None:
        close = close_names(name, available_passes())
        hint = "did you mean " + " or ".join(close) + "?" if close else "a pass listed by `rlxir passes`"
        notes = "".join(f"; {problem}" for problem in entry_point_problems())
        raise _error(spec, match.start(1), f"unknown pass {name!r}{notes}", hint)
    written = _options(spec, match, cls) if match.group(2) else []
    try:
        instance = cls(**dict(written))
    except (TypeError, ValueError) as error:
        raise _error(spec, match.start(1), f"cannot configure {name}: {error}") from None
    return PassEntry(instance, tuple(written))


def _options(spec: str, match: re.Match, cls: type[Pass]) -> list:
    body_start = match.start(2) + 1
    body = match.group(2)[1:-1]
    types = cls.option_types()
    by_text = {option_text_name(field): field for field in types}
    written: list[tuple[str, Any]] = []
    for item in re.finditer(r"[^,\s]+", body):
        offset = body_start + item.start()
        key, equals, value = item.group().partition("=")
        field = by_text.get(key)
        if field is None:
            known = ", ".join(by_text) or "none"
            raise _error(spec, offset, f"pass {cls.name} has no option {key!r}", f"one of: {known}")
        if not equals:
            raise _error(spec, offset, f"option {key} needs a value", f"{key}=VALUE")
        if any(given == field for given, _ in written):
            raise _error(spec, offset, f"option {key} of {cls.name} is given twice", f"one {key}=VALUE")
        written.append((field, _convert(spec, offset + len(key) + 1, key, value, types[field])))
        if field == "target" and value:
            _check_target_option(spec, offset + len(key) + 1, cls.name, value)
    return written


def _check_target_option(spec: str, offset: int, pass_name: str, value: str) -> None:
    # A target option names a registered target; say so where it is written, not when the pass runs.
    from rlxir.targets.target import get_target

    try:
        get_target(value)
    except RlxError as error:
        raise _error(spec, offset, f"{pass_name}: {error.message}", error.expected) from None


def _convert(spec: str, offset: int, key: str, text: str, kind: object) -> Any:
    try:
        if kind is bool:
            if text not in ("true", "false"):
                raise ValueError
            return text == "true"
        if kind is int:
            return int(text)
        if kind is float:
            return float(text)
        if kind in (tuple, tuple[str, ...]) or getattr(kind, "__origin__", None) is tuple:
            return tuple(part for part in text.split(":") if part)
        return text
    except ValueError:
        kind_name = getattr(kind, "__name__", str(kind))
        raise _error(spec, offset, f"option {key} takes {kind_name}, got {text!r}") from None


def check_ordering(entries: Sequence[PassEntry]) -> None:
    """Raise `PipelineError` naming both passes when a declared order is broken."""
    positions: dict[str, list[int]] = {}
    for index, entry in enumerate(entries):
        positions.setdefault(entry.name, []).append(index)
    for index, entry in enumerate(entries):
        cls = type(entry.instance)
        for required in cls.requires:
            if not any(other < index for other in positions.get(required, [])):
                raise PipelineError(f"pass {entry.name} requires {required} to run before it",
                                    expected=f"{required} earlier in the pipeline than {entry.name}")
        for later in cls.must_precede:
            if any(other < index for other in positions.get(later, [])):
                raise PipelineError(f"pass {entry.name} must run before {later}",
                                    expected=f"{entry.name} earlier in the pipeline than {later}")
