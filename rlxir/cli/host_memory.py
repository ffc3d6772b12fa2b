"""Refusing, before it starts, a run whose host memory this machine does not have.

`rlxir run` holds its values in this machine's memory: the reference interpreter's values
while they are live (`rlxir.interpreter.live_peak`: the graph's own liveness, plus the
running op's scratch), and for an arena run on the CPU the arena, its side buffers, the
feeds and the outputs of both runs. `host_need` adds those up from the graph and the plan
before anything is allocated, and `check_host_memory` refuses a run that needs more than
the memory available now (MemAvailable in /proc/meminfo, else the machine's memory), with
both figures, instead of letting the OS kill it halfway.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np

from rlxir.targets.devices import format_bytes
from rlxir.errors import RlxError, UnboundSymbolError
from rlxir.ir.graph import Graph
from rlxir.interpreter import bind_for_run, live_peak

MEMINFO = Path("/proc/meminfo")


class HostMemoryError(RlxError):
    """A run refused before it starts: this machine does not have the host memory it needs."""


def physical_memory_bytes() -> int | None:
    """This machine's memory, or None where the OS does not say."""
    import os

    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def available_memory_bytes() -> tuple[int, str] | None:
    """(bytes this process can still allocate, where the figure comes from), or None."""
    try:
        for line in MEMINFO.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024, f"MemAvailable in {MEMINFO}"
    except (OSError, ValueError, IndexError):
        pass
    physical = physical_memory_bytes()
    return None if physical is None else (physical, "this machine's memory")


@attrs.frozen
class HostNeed:
    """The host bytes a run will hold at its peak, by part (each 0 where it does not apply)."""

    interpreter: int  # the reference run's peak (its values and the running op's scratch)
    interpreter_step: str | None  # the step of that peak
    arena: int  # the arena and its side buffers, when they live in host memory
    feeds: int  # the inputs and params the runs are given (made once, held by both)
    outputs: int  # the outputs both runs hold while they are compared

    @property
    def total(self) -> int:
        """The interpreter runs first and frees its values but the feeds and outputs; then the
        arena run holds the arena next to them."""
        return max(self.interpreter, self.feeds + self.outputs + self.arena)

    def text(self) -> str:
        parts = []
        if self.interpreter:
            parts.append(f"the interpreter's peak {format_bytes(self.interpreter)} at %{self.interpreter_step}")
        if self.arena:
            parts.append(f"then the arena and side buffers {format_bytes(self.arena)}, feeds "
                         f"{format_bytes(self.feeds)} and outputs {format_bytes(self.outputs)}")
        return "; ".join(parts)


def _numpy_bytes(graph: Graph, names) -> int:
    return sum(graph.type(name).nbytes(itemsize=np.dtype(graph.type(name).dtype.numpy).itemsize) for name in names)


def host_need(reference: Graph | None, arena: Graph | None = None, arena_bytes: int = 0, output_copies: int = 1) -> HostNeed:
    """What a run holds: the interpreter on `reference` (bound; None: no reference run) and,
    when `arena` (the compiled graph) is given, an arena run of `arena_bytes` (arena and side
    buffers in host memory; 0 on a device) whose outputs come back as `output_copies` host
    arrays besides the reference's."""
    peak = live_peak(reference) if reference is not None else None
    fed = reference if reference is not None else arena
    assert fed is not None
    feeds = _numpy_bytes(fed, fed.inputs() + fed.params())
    outputs = _numpy_bytes(fed, fed.outputs) * ((1 if reference is not None else 0) + (output_copies if arena else 0))
    return HostNeed(peak.bytes if peak else 0, peak.step if peak else None, arena_bytes if arena is not None else 0,
                    feeds, outputs)


def check_host_memory(need: HostNeed, graph: Graph, available: tuple[int, str] | None = None) -> None:
    """Raise a located `RlxError` when `need` is more than the memory available now
    (`available`: (bytes, source), default `available_memory_bytes()`; None: not known).
    A single value of `graph` larger than that is named at its definition; otherwise the
    error stands at the step of the interpreter's peak (or the graph's header)."""
    limit = available_memory_bytes() if available is None else available
    if limit is None or need.total <= limit[0]:
        return
    free, source = limit
    for name in graph.schedule():
        size = _numpy_bytes(graph, [name])
        if size > free:
            raise HostMemoryError(f"%{name} : {graph.type(name)} needs {size} B ({format_bytes(size)}), more than the "
                           f"{format_bytes(free)} of memory available ({source}); the reference interpreter cannot "
                           "hold it", graph.location(name), expected=EXPECTED)
    where = graph.location(need.interpreter_step) if need.interpreter_step and need.interpreter >= need.total \
        else graph.loc
    raise HostMemoryError(f"this run needs about {format_bytes(need.total)} of host memory ({need.text()}), but only "
                   f"{format_bytes(free)} is available ({source})", where, expected=EXPECTED)


EXPECTED = ("smaller dims (bind a smaller batch with --batch or -D), --no-check to run the arena without the "
            "reference, or rlxir compile to size it without running it")


def check_interpreter_memory(graph: Graph) -> None:
    """`rlxir run` without a target: refuse when the interpreter's peak on `graph` does not
    fit (nothing to check while a symbol is unbound: that is refused with its own message)."""
    try:
        bound = bind_for_run(graph)
    except UnboundSymbolError:
        return
    check_host_memory(host_need(bound), bound)


def check_arena_run_memory(reference: Graph | None, compiled: Graph, bindings, arena_bytes: int,
                           device: str, reference_done: bool = False) -> None:
    """`rlxir run --target`: refuse when the reference run on `reference` (None: --no-check)
    and the arena run of `compiled` (its arena and side buffers `arena_bytes`, in host memory
    on the CPU) do not fit. With `reference_done` (compare --execute, whose reference run is
    made once and kept) only the arena run's part is counted."""
    bound = bind_for_run(reference, bindings) if reference is not None else None
    need = host_need(bound, compiled, arena_bytes if device == "cpu" else 0)
    if reference_done:
        need = attrs.evolve(need, interpreter=0, interpreter_step=None)
    check_host_memory(need, bound if bound is not None else compiled)


def check_device_check_memory(plan, reference: Graph, unbound: Graph | None, bindings) -> None:
    """`rlxir run --device gpu` with its check (`rlxir.executor.device_check`): the host holds
    the feeds, and for a ``rows`` check the NumPy interpreter's run on the sampled rows (the
    outputs' rows are small), for a ``host`` check the outputs copied from the device."""
    feeds = _numpy_bytes(reference, reference.inputs() + reference.params())
    interpreter, step, outputs = 0, None, 0
    if plan.how == "rows":
        sampled = bind_for_run(unbound, {**bindings, plan.batch_symbol: len(plan.rows)})
        peak = live_peak(sampled)
        interpreter, step = peak.bytes, peak.step
    if plan.how == "host":
        outputs = _numpy_bytes(reference, reference.outputs)
    check_host_memory(HostNeed(feeds + interpreter, step, 0, feeds, outputs), reference)
