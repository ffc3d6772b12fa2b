"""Plan a lowered graph's memory and report it: table, JSON and picture.

`plan_graph` turns a lowered, bound graph into buffers (`rlxir.compiler.lifetimes`), places them
with a planner (`rlxir.planning`), validates the placement, and returns a `MemoryPlan`:
the arena, the lower bound, the unshared sum, every buffer's offset, size, lifetime and
value, and the side buffers that live outside the arena.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import attrs

from rlxir.targets.devices import format_bytes
from rlxir.gcpause import no_collections
from rlxir.ir.graph import Graph
from rlxir.compiler.lifetimes import graph_buffers
from rlxir.planning import aligned_size, get_planner, offsets_in_order, validate_plan


@attrs.define(slots=True)
class PlannedBuffer:
    """One buffer of a plan: where it sits, how big it is, when it lives, what it holds."""

    name: str
    value: str
    kind: str
    offset: int
    size: int  # aligned bytes reserved in the arena
    start: int
    end: int
    type: str

    @property
    def end_offset(self) -> int:
        return self.offset + self.size


@attrs.frozen
class MemoryPlan:
    """A validated placement of one graph's buffers, with the numbers that judge it."""

    planner: str
    alignment: int
    sizing: str
    mode: str
    arena_bytes: int
    lower_bound_bytes: int
    unshared_bytes: int
    placement: tuple = attrs.field(repr=False)  # (buffers, info, offsets) as planned
    side_buffers: Mapping[str, int]
    steps: int
    seconds: float

    @functools.cached_property
    def buffers(self) -> tuple:
        """Every planned buffer (built on first use: fitting needs only the arena)."""
        buffers, info, offsets = self.placement
        return tuple(
            PlannedBuffer(buffer.name, info[buffer.name].value, info[buffer.name].kind, offset,
                          aligned_size(buffer.size, self.alignment), buffer.start, buffer.end, info[buffer.name].type)
            for buffer, offset in zip(buffers, offsets_in_order([b.name for b in buffers], offsets))
        )

    @property
    def efficiency(self) -> float:
        """lower bound / arena: 1.0 means no plan of these buffers could be smaller."""
        return self.lower_bound_bytes / self.arena_bytes if self.arena_bytes else 1.0

    @property
    def side_buffer_bytes(self) -> int:
        return sum(self.side_buffers.values())

    def weight_layout(self) -> dict[str, int]:
        """Offsets of the params, by name (what a backward plan binds its weights to)."""
        return {buffer.value: buffer.offset for buffer in self.buffers if buffer.kind == "param"}

    def summary(self) -> dict:
        return {
            "planner": self.planner, "alignment": self.alignment, "sizing": self.sizing, "mode": self.mode,
            "arena_bytes": self.arena_bytes, "lower_bound_bytes": self.lower_bound_bytes,
            "unshared_bytes": self.unshared_bytes, "efficiency": round(self.efficiency, 6),
            "buffers": len(self.buffers), "side_buffers": dict(self.side_buffers), "seconds": round(self.seconds, 6),
        }

    def to_json(self) -> dict:
        data = self.summary()
        data["buffers"] = [attrs.asdict(buffer) for buffer in self.buffers]
        return data

    def table(self, limit: int | None = 40) -> str:
        """The plan as text: headline numbers, then the largest buffers by size."""
        lines = [
            f"arena        {self.arena_bytes} B ({format_bytes(self.arena_bytes)})",
            f"lower bound  {self.lower_bound_bytes} B ({format_bytes(self.lower_bound_bytes)}), "
            f"efficiency {self.efficiency:.1%}",
            f"unshared     {self.unshared_bytes} B ({format_bytes(self.unshared_bytes)})",
            f"planner      {self.planner}, alignment {self.alignment}, sizing {self.sizing}, {len(self.buffers)} buffers",
        ]
        for name, size in self.side_buffers.items():
            lines.append(f"side buffer  {name}: {size} B ({format_bytes(size)}), outside the arena")
        ordered = sorted(self.buffers, key=lambda buffer: (-buffer.size, buffer.offset))
        shown = ordered if limit is None else ordered[:limit]
        lines.append("")
        lines.append(f"{'offset':>14} {'size':>14}  {'live':>13}  {'kind':<10} value")
        for buffer in shown:
            live = f"[{buffer.start}, {buffer.end})"
            lines.append(f"{buffer.offset:>14} {buffer.size:>14}  {live:>13}  {buffer.kind:<10} %{buffer.value} "
                         f": {buffer.type}")
        if len(shown) < len(ordered):
            lines.append(f"... {len(ordered) - len(shown)} smaller buffers (--json lists all)")
        return "\n".join(lines)

    def plot(self, path: str, title: str = "") -> None:
        """Draw the plan: time on x, offset on y, a rectangle per buffer (needs matplotlib)."""
        from rlxir.compiler.plan_plot import draw_plan

        draw_plan(self, path, title)


def plan_graph(graph: Graph, planner: str, alignment: int, sizing: str, mode: str = "inference",
               weight_layout: Mapping[str, int] | None = None, side_buffers: Mapping[str, int] | None = None,
               time_budget: float | None = None, validate: bool = True) -> MemoryPlan:
    """Place the buffers of a lowered, bound graph and validate the placement.

    The `bump` planner uses RLX's aliasing (reshape and every cast share their input's
    slot); the others use the views `lower` marked.
    """
    view_rule = "bump" if planner == "bump" else "lir"
    with no_collections():
        buffers, info = graph_buffers(graph, sizing, view_rule, mode, weight_layout)
        result = get_planner(planner).plan(buffers, alignment, time_budget)
        if validate:
            validate_plan(buffers, result.offsets, alignment, result.arena_bytes)
    return MemoryPlan(planner, alignment, sizing, mode, result.arena_bytes, result.lower_bound_bytes,
                      result.unshared_bytes, (buffers, info, result.offsets), dict(side_buffers or {}), len(graph),
                      result.seconds)
