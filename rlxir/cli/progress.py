"""Progress on a terminal for long work: one line on stderr, rewritten in place.

Nothing is written unless stderr is a terminal, so pipes, files and `--json` consumers
never see it. Stage lines (parsing, compiling, planning) show at once; per-pass lines only
once the work has run about a second, so a quick compile does not flicker.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rlxir.pass_machinery.instruments import Instrument

PASS_LINES_AFTER_SECONDS = 1.0
_prefix = [""]  # what every line starts with while `prefixed` holds (one item: the current prefix)


def on_terminal() -> bool:
    """Whether stderr is a terminal, where progress lines are shown."""
    return sys.stderr.isatty()


def show(message: str) -> None:
    """Replace the progress line with `message` (on a terminal only)."""
    if on_terminal():
        print(f"\r\033[K{_prefix[0]}{message}", end="", file=sys.stderr, flush=True)


@contextmanager
def prefixed(text: str) -> Iterator[None]:
    """Start every line shown inside the block with `text` (e.g. ``[2/6] ``: which of
    several items the work belongs to), whoever shows it."""
    before = _prefix[0]
    _prefix[0] = text
    try:
        yield
    finally:
        _prefix[0] = before


def clear() -> None:
    """Remove the progress line before the report is printed."""
    if on_terminal():
        print("\r\033[K", end="", file=sys.stderr, flush=True)


class Throttled:
    """A progress sink for work that reports often (a planner): passes a message on to
    `show` at most every `interval` seconds, and nothing when stderr is not a terminal."""

    def __init__(self, interval: float = 0.1):
        self.interval = interval
        self.enabled = on_terminal()
        self.shown_at = -interval

    def __call__(self, message: str) -> None:
        now = time.perf_counter()
        if self.enabled and now - self.shown_at >= self.interval:
            self.shown_at = now
            show(message)


class PassProgress(Instrument):
    """Names each pass of a pipeline as it starts: ``cuda: pass 3/12 fuse (2.1 s)``; once
    the pipeline is done, the planning that follows: ``planning 40 nodes with best ...``
    (with no `planner`, as for `rlxir opt`, the line is cleared instead)."""

    def __init__(self, label: str, total: int, planner: str = ""):
        self.label, self.total, self.planner = label, total, planner
        self.started = time.perf_counter()

    def before_pass(self, index, entry, graph, ctx) -> None:
        elapsed = time.perf_counter() - self.started
        if elapsed >= PASS_LINES_AFTER_SECONDS:
            show(f"{self.label}: pass {index + 1}/{self.total} {entry.name} ({elapsed:.1f} s, {len(graph)} nodes)")

    def on_failure(self, index, entry, graph, ctx, error) -> None:
        clear()

    def finish(self, graph, ctx) -> None:
        if not self.planner:
            clear()
            return
        show(f"planning {len(graph)} nodes with {self.planner} ...")


__all__ = ["PassProgress", "Throttled", "clear", "prefixed", "show"]
