"""Compile a graph for a target: bind, run the target's pipeline, plan, check the ceiling.

One code path per target. `prepare_exec_graph` is everything a target's compile does
before planning; `plan_exec_graph` is the planning; `plan_compile` is the two, and
`compile` is `plan_compile` plus the target's refusal of an arena past its ceiling.
`plan_arena_bytes` (the fit driver's probe) is `plan_compile`'s arena, so its answer
equals `compile(...).arena_bytes` by construction, never an estimate. `FitReport` is the
one verdict on a planned arena against a budget that every command reports.

A target name is resolved once, by the public function given it (`compile`,
`plan_compile`, `plan_arena_bytes`); `plan_for_target`, `prepare_exec_graph`,
`plan_exec_graph` and the passes take the `Target` itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import attrs

from rlxir.targets.devices import format_bytes
from rlxir.errors import RlxError, UnboundSymbolError
from rlxir.ir.graph import Graph
from rlxir.compiler.budget import Budget
from rlxir.compiler.memory_plan import MemoryPlan, plan_graph
from rlxir.pass_machinery.pass_base import PassContext
from rlxir.pass_machinery.pass_base import PassStat
from rlxir.pass_machinery.pipeline import Pipeline
from rlxir.targets.target import Target, get_target

if TYPE_CHECKING:
    from rlxir.pass_machinery.instruments import Instrument

SMALLER_TO_COMPILE = "a smaller batch or sequence (rlxir fit finds the largest that compiles)"
SMALLER_TO_FIT = "a smaller batch or sequence (rlxir fit finds the largest that fits)"


class ArenaTooLarge(RlxError):
    """A target's ABI cannot address the arena the plan needs."""

    def __init__(self, target: Target, arena_bytes: int, what: str = "this graph", expected: str = SMALLER_TO_COMPILE):
        super().__init__(f"{target.name} refuses {what}: {_needs(arena_bytes)}, past the {ceiling_text(target)}",
                         expected=expected)
        self.target = target.name
        self.arena_bytes = arena_bytes
        self.ceiling = addressable_bytes(target)


@attrs.frozen
class CompileOptions:
    """Ways to compile other than the target's defaults (None keeps the target's choice).

    - `planner`, `alignment`, `sizing`: override the target's planner declaration.
    - `mode`: "inference" or "backward_activations_only" (with `weight_layout`, the
      forward plan's param offsets by name).
    - `time_budget`: seconds for the `best` planner.
    - `instruments`: pass instruments (rlxir.pass_machinery.instruments) around the pipeline.
    - `validate`: check the placement (no live overlap, alignment, inside the arena).
    - `reuse_graph`: bind and transform the graph given itself instead of a copy, for a
      caller that has no further use for it as written (`rlxir compile` parses a file for
      one compile): the same result, without copying every node (about a quarter of a
      second per 10^5 nodes). The result's graph is then the graph given.
    """

    planner: str | None = None
    alignment: int | None = None
    sizing: str | None = None
    mode: str = "inference"
    weight_layout: Mapping[str, int] | None = None
    time_budget: float | None = None
    instruments: Sequence[Instrument] = ()
    validate: bool = True
    reuse_graph: bool = False


@attrs.frozen
class ExecGraph:
    """A graph as the target runs it, and what each pass did on the way there."""

    graph: Graph
    stages: tuple[PassStat, ...]
    bindings: Mapping[str, int]


@attrs.frozen
class CompileResult:
    """What `compile` produced: the final graph, its memory plan and the pipeline's stages."""

    target: Target
    graph: Graph
    plan: MemoryPlan
    stages: tuple[PassStat, ...]
    bindings: Mapping[str, int]

    @property
    def arena_bytes(self) -> int:
        return self.plan.arena_bytes

    @property
    def lower_bound_bytes(self) -> int:
        return self.plan.lower_bound_bytes

    @property
    def side_buffers(self) -> Mapping[str, int]:
        return self.plan.side_buffers

    def node_counts(self) -> list[tuple[str, int, int]]:
        """(pass, nodes before, nodes after) for every pass the pipeline ran."""
        return [(stage.spec, stage.nodes_before, stage.nodes_after) for stage in self.stages]


def bind_for_compile(graph: Graph, bindings: Mapping[str, int] | None = None,
                     in_place: bool = False) -> tuple[Graph, dict[str, int]]:
    """The graph with every symbol bound (header defaults, then `bindings`): a copy, or
    with `in_place` the graph itself.

    Raises `UnboundSymbolError` naming every symbol that has neither, and `RlxError` for a
    binding of a symbol the graph does not declare.
    """
    given = graph.bound_symbols(bindings)
    values = {symbol: given[symbol] for symbol in graph.symbols if symbol in given}
    unknown = sorted(set(bindings or {}) - set(graph.symbols))
    if unknown:
        declared = ", ".join(graph.symbols) or "none"
        raise RlxError(f"graph {graph.name} has no symbol {', '.join(unknown)}", graph.loc,
                       expected=f"one of its symbols: {declared}")
    missing = [symbol for symbol in graph.symbols if symbol not in values]
    if missing:
        raise UnboundSymbolError(missing, graph.loc, context=f"in graph {graph.name}: a graph is planned only once "
                                                              "every symbol is bound")
    if in_place:
        return (graph.bind(values, in_place=True) if values else graph), values
    return (graph.bind(values) if values else graph.copy()), values


def prepare_exec_graph(graph: Graph, target: Target, bindings: Mapping[str, int] | None = None,
                       options: CompileOptions | None = None) -> ExecGraph:
    """Everything `target`'s compile does before planning: bind, then run its pipeline."""
    options = options or CompileOptions()
    bound, values = bind_for_compile(graph, bindings, options.reuse_graph)  # with the collector off
    ctx = PassContext(target=target, bindings=dict(values))
    Pipeline.parse(target.pipeline).run(bound, ctx, options.instruments)
    return ExecGraph(bound, tuple(ctx.stats), values)


def plan_exec_graph(exec_graph: ExecGraph, target: Target, options: CompileOptions | None = None) -> MemoryPlan:
    """Plan the executed graph exactly as `target` does (or as `options` override)."""
    options = options or CompileOptions()
    planner = options.planner or target.planner
    alignment = options.alignment or target.alignment
    sizing = options.sizing or target.sizing
    plan = plan_graph(exec_graph.graph, planner, alignment, sizing, options.mode, options.weight_layout,
                      time_budget=options.time_budget, validate=options.validate)
    return attrs.evolve(plan, side_buffers=target.side_buffer_bytes(plan.arena_bytes))


def plan_compile(graph: Graph, target: str | Target, bindings: Mapping[str, int] | None = None,
                 options: CompileOptions | None = None) -> CompileResult:
    """What `compile` returns, without refusing an arena past the ceiling: for reports that
    show a refused plan, and for the fit driver's probe."""
    return plan_for_target(graph, get_target(target), bindings, options)


def plan_for_target(graph: Graph, target: Target, bindings: Mapping[str, int] | None = None,
                    options: CompileOptions | None = None) -> CompileResult:
    """`plan_compile` for a target already resolved: the public functions resolve a name
    once and every step below takes the `Target` itself."""
    exec_graph = prepare_exec_graph(graph, target, bindings, options)
    plan = plan_exec_graph(exec_graph, target, options)
    return CompileResult(target, exec_graph.graph, plan, exec_graph.stages, dict(exec_graph.bindings))


def plan_arena_bytes(graph: Graph, target: str | Target, bindings: Mapping[str, int] | None = None,
                     options: CompileOptions | None = None) -> int:
    """The arena `compile` would plan, through the same steps (no ceiling check)."""
    return plan_compile(graph, target, bindings, options).arena_bytes


def compile(graph: Graph, target: str | Target, bindings: Mapping[str, int] | None = None,
            options: CompileOptions | None = None) -> CompileResult:
    """Compile `graph` for `target`; raises `ArenaTooLarge` past the target's ceiling."""
    result = plan_compile(graph, target, bindings, options)
    if exceeds_ceiling(result.target, result.arena_bytes):
        raise ArenaTooLarge(result.target, result.arena_bytes)
    return result


ADDRESS_SPACE_64 = 2**64 - 1  # the last byte a 64-bit offset reaches


def addressable_bytes(target: Target) -> int:
    """The largest arena `target` can address: its ABI ceiling, or 2^64 - 1 on a 64-bit target."""
    return ADDRESS_SPACE_64 if target.arena_ceiling is None else target.arena_ceiling


def ceiling_text(target: Target) -> str:
    """What bounds `target`'s arena, in words, for refusals."""
    limit = addressable_bytes(target)
    if target.arena_ceiling is None:
        return f"{limit} B a 64-bit offset can address"
    return f"{target.name} ABI ceiling of {limit} B ({format_bytes(limit)})"


def exceeds_ceiling(target: Target, arena_bytes: int) -> bool:
    """Whether `target`'s ABI refuses an arena of this size (64-bit targets: past 2^64 - 1)."""
    return arena_bytes > addressable_bytes(target)


def fit_verdict(target: Target, arena_bytes: int, budget_bytes: int | None) -> tuple[bool | str, str]:
    """Whether an arena fits: ``True``, ``False`` or ``"unknown"`` (no budget known), and why.

    One answer for compile, compare and their training forms, so every command and every
    JSON report says the same thing about the same plan.
    """
    if exceeds_ceiling(target, arena_bytes):
        return False, f"past the {ceiling_text(target)}"
    if budget_bytes is None:
        return "unknown", "no budget: no device capacity is known and the target has no ceiling (give --vram)"
    if arena_bytes <= budget_bytes:
        return True, f"within the budget of {budget_bytes} B ({format_bytes(budget_bytes)})"
    return False, f"over the budget of {budget_bytes} B ({format_bytes(budget_bytes)})"


def verdict_text(fits: bool | str, reason: str) -> str:
    """``yes``, ``no: <reason>`` or ``unknown: <reason>`` for tables and reports."""
    if fits is True:
        return "yes"
    return f"{'unknown' if fits == 'unknown' else 'no'}: {reason}"


def _needs(arena_bytes: int) -> str:
    return f"its arena needs {arena_bytes} B ({format_bytes(arena_bytes)})"


@attrs.frozen
class FitReport:
    """A planned arena judged against its target and a budget (`rlxir.compiler.budget.Budget`): the one
    verdict that compile, compare, fit and their training forms report.

    `fits` and `reason` are `fit_verdict`'s; `refused` holds when the target's ABI cannot
    address the arena, where `compile` raises `ArenaTooLarge`.
    """

    target: Target
    arena_bytes: int
    budget: Budget
    fits: bool | str
    reason: str

    @classmethod
    def judge(cls, target: Target, arena_bytes: int, budget: Budget) -> FitReport:
        fits, reason = fit_verdict(target, arena_bytes, budget.bytes)
        return cls(target, arena_bytes, budget, fits, reason)

    @property
    def refused(self) -> bool:
        return exceeds_ceiling(self.target, self.arena_bytes)

    def text(self) -> str:
        return verdict_text(self.fits, self.reason)

    def to_json(self, brief: bool = False) -> dict:
        """The report's fields of a JSON report; `brief`: without the budget's words and `refused`."""
        fields: dict = {"ceiling_bytes": self.target.arena_ceiling, "budget_bytes": self.budget.bytes}
        if not brief:
            fields.update(budget=self.budget.explain(), refused=self.refused)
        return {**fields, "fits": self.fits, "fits_reason": self.reason}

    def error(self, what: str = "this graph") -> RlxError | None:
        """The diagnostic of an arena refused or over a known budget; None when it fits or no
        budget is known."""
        if self.fits is not False:
            return None
        if self.refused:
            return ArenaTooLarge(self.target, self.arena_bytes, what, expected=SMALLER_TO_FIT)
        return RlxError(f"{self.target.name} cannot fit {what}: {_needs(self.arena_bytes)}, {self.reason}",
                        expected=SMALLER_TO_FIT)
