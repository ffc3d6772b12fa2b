"""The garbage collector around bulk graph work.

Parsing, binding, running a pipeline and planning allocate millions of small, long-lived
objects and make almost no garbage cycles (a whole rocm compile of a 10^5-node graph
leaves 454 cyclic objects, the same at 10^4). CPython's default thresholds would scan the
new objects again and again as they age, and even a raised first threshold scans each of
them once (a young collection over 10^6 objects takes about 0.27 s, and a 10^6-node
compile makes tens of millions). So:

- `no_collections()` turns the collector off for such work (the parser, `Graph.bind`, a
  pipeline's run, the planner), and
- `fewer_collections()` raises the thresholds for a broader block (a whole CLI command, an
  import from a framework), where other code may make cycles worth collecting.

When either block ends, the objects it made are moved to the oldest generation without
being scanned (`gc.freeze()` then `gc.unfreeze()`, two list splices): the default
threshold restored would otherwise set off a young collection that scans every one of
them only to find them alive. Cycles among them wait for the next full collection, which
CPython runs on its usual schedule. A process that froze objects itself keeps them frozen:
the splice is skipped and the young collection runs as before.
"""

from __future__ import annotations

import contextlib
import gc


def _promote_young_objects() -> None:
    """Move every tracked object to the oldest generation without a scan, unless some other
    code holds objects frozen (unfreezing would release them too)."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


@contextlib.contextmanager
def fewer_collections():
    """Raise the collector's thresholds for the block; restore them after (nesting is fine)."""
    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], 1_000_000), max(thresholds[1], 100), max(thresholds[2], 100))
    try:
        yield
    finally:
        _promote_young_objects()
        gc.set_threshold(*thresholds)


@contextlib.contextmanager
def no_collections():
    """Turn the collector off for the block (on again after, if it was on): for bulk graph
    work that makes no garbage cycles to speak of."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        _promote_young_objects()
        if was_enabled:
            gc.enable()
