"""Fewer garbage collections during bulk graph work.

Parsing, running a pipeline and planning allocate millions of small, long-lived objects and
create no garbage cycles worth finding early; CPython's default thresholds then run full
collections again and again over an ever larger heap. Raising the first threshold for the
duration of such work cuts 20-50 % of its time on 10^5-node graphs.

When the outermost such block ends, the objects it made are moved to the oldest generation
without being scanned (`gc.freeze()` then `gc.unfreeze()`, two list splices): restoring the
default threshold would otherwise set off a young collection that scans every one of them
only to find them alive (about 1 s of a 10^5-node compile). The few cycles a pipeline
leaves behind (a few hundred objects on a 10^4-node graph) wait for the next full
collection, which CPython runs on its usual schedule. A process that froze objects itself
keeps them frozen: the splice is skipped and the young collection runs as before.
"""

from __future__ import annotations

import contextlib
import gc

_depth = 0  # how many of the blocks below are open; the outermost promotes what they made


def _promote_young_objects() -> None:
    """Move every tracked object to the oldest generation without a scan, unless some other
    code holds objects frozen (unfreezing would release them too)."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


@contextlib.contextmanager
def _bulk_work():
    global _depth
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            _promote_young_objects()


@contextlib.contextmanager
def fewer_collections():
    """Raise the collector's thresholds for the block; restore them after (nesting is fine)."""
    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], 1_000_000), max(thresholds[1], 100), max(thresholds[2], 100))
    try:
        with _bulk_work():
            yield
    finally:
        gc.set_threshold(*thresholds)


@contextlib.contextmanager
def no_collections():
    """Turn the collector off for the block (on again after, if it was on): for work that
    makes no garbage cycles at all, such as reading a file into a graph, where even the
    raised thresholds above still scan the new objects a few times (8-10 % of a parse)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        with _bulk_work():
            yield
    finally:
        if was_enabled:
            gc.enable()
