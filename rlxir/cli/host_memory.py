"""Refusing, before it starts, a reference run whose values cannot be held in host memory.

The interpreter keeps every value as a NumPy array in this machine's memory; a value
larger than all of it can never be allocated, and NumPy's own failure ("array is too
big", MemoryError) would name no value. This check names the first such value instead.
"""

from __future__ import annotations

import os

from rlxir.devices import format_bytes
from rlxir.errors import RlxError
from rlxir.graph import Graph


def physical_memory_bytes() -> int | None:
    """This machine's memory, or None where the OS does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_host_memory(graph: Graph, available: int | None = None) -> None:
    """Raise a located `RlxError` for the first value of `graph` (bound) larger than memory."""
    limit = physical_memory_bytes() if available is None else available
    if limit is None:
        return
    for name in graph.schedule():
        value_type = graph.type(name)
        if not isinstance(value_type.numel, int):
            continue  # unbound symbols are refused elsewhere, with their own message
        size = value_type.nbytes()
        if size > limit:
            raise RlxError(f"%{name} : {value_type} needs {size} B ({format_bytes(size)}), more than this machine's "
                           f"{format_bytes(limit)} of memory; the reference interpreter cannot hold it",
                           graph.location(name), expected="smaller dims (bind a smaller batch with --batch or -D), "
                                                          "or rlxir compile to size it without running it")
