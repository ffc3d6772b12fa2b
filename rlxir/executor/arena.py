"""One arena as the plan lays it out: a byte array, a slot per value, poison for the dead.

`ArenaLayout` reads a compiled graph and its `MemoryPlan`: every buffer's offset and size,
every view's root and byte offset (the plan's own view rule, `rlxir.compiler.lifetimes.view_roots`),
and each value's storage type (`rlxir.executor.storage`). It refuses a layout that cannot
be run as planned (a view past its root, a slot past the arena, a value larger than its
buffer, two buffers live at once on the same bytes) with an `ExecutionError` naming the
value and calling it a defect of the target's pipeline or planner. `Arena` is that layout on an array
module: one allocation of exactly `arena_bytes`, views into it, and `poison`, which
overwrites a dead buffer's bytes with 0xFF (a NaN in every float format, -1 in every
integer one) except where a buffer that is still live owns them.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from rlxir.errors import RlxError
from rlxir.ir.graph import Graph
from rlxir.compiler.lifetimes import view_roots
from rlxir.planning import PlanError, offsets_in_order, validate_plan
from rlxir.executor.storage import storage_dtype

POISON_BYTE = 0xFF
DEFECT = "a defect in the target's pipeline or planner"


class ExecutionError(RlxError):
    """A compiled graph that cannot be run in its planned arena, or a run that failed."""


@attrs.frozen
class Slot:
    """Where a value's elements sit: byte offset in the arena, storage dtype, shape."""

    offset: int
    dtype: np.dtype
    shape: tuple

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


@attrs.frozen
class ArenaLayout:
    """The arena's layout for one compiled graph: slots, buffers and their lifetimes."""

    arena_bytes: int
    slots: dict  # value (or "<value>.workspace") -> Slot
    buffers: tuple  # (name, offset, bytes, start, end) per planned buffer, in plan order
    roots: dict  # view -> (root, byte offset in the root)

    @classmethod
    def of(cls, graph: Graph, plan) -> ArenaLayout:
        placed, _, offsets = plan.placement
        sizing = plan.sizing
        roots = view_roots(graph, "bump" if plan.planner == "bump" else "lir")
        buffers = tuple((buffer.name, offset, buffer.size, buffer.start, buffer.end)
                        for buffer, offset in zip(placed, offsets_in_order([b.name for b in placed], offsets)))
        extent = {name: (offset, size) for name, offset, size, _, _ in buffers}
        slots: dict[str, Slot] = {}
        for name, offset, size, _, _ in buffers:
            if offset < 0 or offset + size > plan.arena_bytes:
                raise ExecutionError(f"buffer {name!r} at [{offset}, {offset + size}) lies outside the "
                                     f"{plan.arena_bytes}-byte arena: {DEFECT}")
        try:  # the placement as it is now, whatever was checked when it was planned
            validate_plan(placed, offsets, plan.alignment, plan.arena_bytes)
        except PlanError as error:
            raise ExecutionError(f"the plan cannot run as placed: {error}: {DEFECT}") from None
            if name.endswith(".workspace") and name not in graph:
                slots[name] = Slot(offset, np.dtype(np.uint8), (size,))
        for name in graph.schedule():
            type_ = graph.type(name)
            dtype = storage_dtype(type_.dtype, sizing)
            root, inside = roots.get(name, (name, 0))
            if root not in extent:
                raise ExecutionError(f"%{name} has no buffer in the plan", graph.location(name))
            root_offset, root_size = extent[root]
            slot = Slot(root_offset + inside, dtype, type_.static_shape())
            if inside < 0 or inside + slot.nbytes > root_size:
                what = f"its view of %{root} at byte {inside}" if root != name else "its buffer"
                raise ExecutionError(f"%{name} needs {slot.nbytes} bytes but {what} holds {root_size - inside}: "
                                     f"{DEFECT}", graph.location(name), "a plan whose views lie inside their roots")
            slots[name] = slot
        return cls(plan.arena_bytes, slots, buffers, roots)


def allocate(xp, nbytes: int, what: str):
    """`nbytes` of uint8 on `xp`; a device that cannot give them is refused with the figures."""
    try:
        return xp.empty(nbytes, dtype=np.uint8)
    except MemoryError:
        pass  # raised below, outside the handler, so the error does not chain CuPy's
    from rlxir.targets.devices import format_bytes

    where = "in host memory"
    if xp is not np:
        free, total = xp.cuda.runtime.memGetInfo()
        where = f"on the GPU: {format_bytes(free)} of its {format_bytes(total)} are free"
    raise ExecutionError(f"{what} of {nbytes} B ({format_bytes(nbytes)}) cannot be allocated {where}",
                         expected="a smaller batch or sequence (rlxir fit finds the largest that fits)")


class Arena:
    """`layout` on array module `xp`: one uint8 allocation, typed views into it."""

    def __init__(self, xp, layout: ArenaLayout):
        self.xp = xp
        self.layout = layout
        self.bytes = allocate(xp, layout.arena_bytes, "the arena")
        self.bytes.fill(POISON_BYTE)  # never-written memory reads as poison too
        self._offsets = np.array([buffer[1] for buffer in layout.buffers], dtype=np.int64)
        self._ends = self._offsets + np.array([buffer[2] for buffer in layout.buffers], dtype=np.int64)
        self._starts = np.array([buffer[3] for buffer in layout.buffers], dtype=np.int64)
        self._dies = np.array([buffer[4] for buffer in layout.buffers], dtype=np.int64)
        # a buffer live to the last step holds an output, an input or a weight: read after the run
        last = max((buffer[4] for buffer in layout.buffers), default=0)
        self.dying: dict[int, list[int]] = {}
        for index, (_, _, _, _, end) in enumerate(layout.buffers):
            if end < last:
                self.dying.setdefault(end - 1, []).append(index)
        self.whole_run = {name for name, _, _, start, end in layout.buffers if start == 0 and end == last}
        """The buffers live from the first step to the last (inputs, weights, outputs)."""

    def view(self, name: str):
        slot = self.layout.slots[name]
        raw = self.bytes[slot.offset: slot.offset + slot.nbytes]
        return raw.view(slot.dtype).reshape(slot.shape)

    def poison_after(self, step: int) -> int:
        """Poison the buffers whose last step is `step`; returns the bytes overwritten."""
        written = 0
        for index in self.dying.get(step, ()):
            low, high = int(self._offsets[index]), int(self._ends[index])
            for start, stop in self._unowned(step, low, high):
                self.bytes[start:stop].fill(POISON_BYTE)
                written += stop - start
        return written

    def _unowned(self, step: int, low: int, high: int) -> list[tuple[int, int]]:
        """[low, high) minus the ranges of buffers written by `step` and live after it."""
        owners = np.nonzero((self._starts <= step) & (self._dies > step + 1)
                            & (self._offsets < high) & (self._ends > low))[0]
        pieces, cursor = [], low
        for owner in sorted(owners, key=lambda index: self._offsets[index]):
            begin, finish = int(self._offsets[owner]), int(self._ends[owner])
            if begin > cursor:
                pieces.append((cursor, begin))
            cursor = max(cursor, finish)
        if cursor < high:
            pieces.append((cursor, high))
        return pieces
