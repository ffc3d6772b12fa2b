"""The fit driver: the largest batch whose compiled arena fits a device.

Every number here comes from the target's own compile path (`rlxir.compiler`): the arena
of a batch is what `compile` would plan for it, never an estimate.

- `device_arena_limit(target)`: the ABI ceiling (None: unlimited).
- `device_capacity_bytes(target, which)`: the capacity probe's answer (or None).
- `arena_budget(target, headroom, vram)`: what the arena may use: the capacity times the
  headroom less the side buffers, and never past the ceiling.
- `fit_batch(target, requested, headroom, build, vram)`: the largest batch in
  1..requested whose arena fits the budget, found by halving then bisecting.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import attrs

from rlxir.compiler import CompileOptions, FitReport, plan_arena_bytes
from rlxir.devices import Capacity, ProbeMiss, Sources, format_bytes, probe_capacity
from rlxir.graph import Graph
from rlxir.target import Target, get_target

DEFAULT_HEADROOM = 0.6
"""Share of device memory the arena and its side buffers may use unless told otherwise."""


def device_arena_limit(target: str | Target) -> int | None:
    """The largest arena the target's ABI can address, or None when unlimited."""
    return get_target(target).arena_ceiling


def device_capacity(target: str | Target, sources: Sources | None = None) -> Capacity | ProbeMiss:
    return probe_capacity(get_target(target).probe, sources)


def device_capacity_bytes(target: str | Target, which: str = "total",
                          sources: Sources | None = None) -> int | None:
    """Device memory the target's probe finds (`which`: "total" or "free"), or None."""
    found = device_capacity(target, sources)
    return found.bytes(which) if isinstance(found, Capacity) else None


@attrs.frozen
class Budget:
    """What the arena may use, and how that was decided."""

    bytes: int | None  # None: unconstrained (no capacity known and no ceiling)
    capacity_bytes: int | None
    ceiling_bytes: int | None
    fixed_side_bytes: int
    shadow_fraction: float
    headroom: float
    source: str

    def explain(self) -> str:
        if self.bytes is None:
            return f"no budget: {self.source}"
        head = f"{self.bytes} B ({format_bytes(self.bytes)})"
        if self.capacity_bytes is None:
            return f"{head}: the ABI ceiling alone ({self.source})"
        parts = [f"{head} = {format_bytes(self.capacity_bytes)} ({self.source}) x {self.headroom:g} headroom"]
        if self.fixed_side_bytes:
            parts.append(f"- {format_bytes(self.fixed_side_bytes)} side buffers")
        if self.shadow_fraction:
            parts.append(f"/ (1 + {self.shadow_fraction:g}) for the arena's f16 shadow")
        text = " ".join(parts)
        if self.ceiling_bytes is not None and self.bytes == self.ceiling_bytes:
            text += ", capped at the ABI ceiling"
        return text


def arena_budget(target: str | Target, headroom: float = DEFAULT_HEADROOM, vram: int | None = None,
                 which: str = "total", sources: Sources | None = None) -> Budget:
    """min(ceiling, capacity x headroom) less the side buffers outside the arena.

    `vram` overrides the probe. Side buffers are fixed (BLAS/DNN workspaces) or a fraction
    of the arena (gpu's f16 shadow): an arena A needs A x (1 + fraction) + fixed bytes.
    With no capacity known the budget is the ceiling alone, or None where there is none.
    """
    target = get_target(target)
    if not 0 < headroom <= 1:
        raise ValueError(f"headroom must be in (0, 1], got {headroom}")
    fixed = sum(size for _, size in target.side_buffers)
    fraction = target.shadow_f16_fraction
    ceiling = target.arena_ceiling
    capacity: int | None
    if vram is not None:
        capacity, source = vram, "given with --vram"
    else:
        found = device_capacity(target, sources)
        capacity = found.bytes(which) if isinstance(found, Capacity) else None
        source = f"{found.source}: {found.device}" if isinstance(found, Capacity) else found.explain()
    if capacity is None:
        budget = ceiling
    else:
        budget = max(int((capacity * headroom - fixed) / (1 + fraction)), 0)
        budget = min(budget, ceiling) if ceiling is not None else budget
    return Budget(budget, capacity, ceiling, fixed, fraction, headroom, source)


@attrs.frozen
class Trial:
    batch: int
    arena_bytes: int
    fits: bool


@attrs.frozen
class FitResult:
    """The answer of `fit_batch`.

    `batch` is the largest batch found to fit (None when even batch 1 does not, or, with
    no budget, the requested batch, unplanned); `tried` lists every batch planned, in order.
    `fits` is True, False, or ``"unknown"`` when there was no budget to fit against.
    """

    target: str
    requested: int
    batch: int | None
    arena_bytes: int | None
    budget: Budget
    fits: bool | str
    tried: tuple
    reason: str

    def to_json(self) -> dict:
        return {
            "target": self.target, "requested": self.requested, "batch": self.batch, "fits": self.fits,
            "arena_bytes": self.arena_bytes, "budget_bytes": self.budget.bytes,
            "capacity_bytes": self.budget.capacity_bytes, "ceiling_bytes": self.budget.ceiling_bytes,
            "budget": self.budget.explain(), "reason": self.reason,
            "tried": [attrs.asdict(trial) for trial in self.tried],
        }


def plan_bound(requested: int) -> int:
    """The most plans `fit_batch` makes for `requested`: 2 * ceil(log2(requested)) + 2."""
    return 2 * math.ceil(math.log2(requested)) + 2


def fit_batch(target: str | Target, requested: int, headroom: float, build: Callable[[int], Graph] | Callable[[int], int],
              vram: int | None = None, options: CompileOptions | None = None, budget: Budget | None = None,
              bindings: Mapping[str, int] | None = None, on_trial: Callable[[Trial], None] | None = None) -> FitResult:
    """The largest batch in 1..requested whose planned arena fits the budget.

    `build(batch)` returns the graph to compile at that batch (bound, or with `bindings`
    completing it), or directly an arena size in bytes (for tests of the search itself).
    The search brackets by halving from `requested` down, then bisects between the largest
    batch seen to fit and the smallest seen not to: at most `plan_bound(requested)` plans,
    and the answer is always a batch that was planned and fit. When batch 1 does not fit,
    the result says so with its numbers; with no budget known, the requested batch is
    returned unplanned, and the reason says why.
    """
    target = get_target(target)
    if requested < 1:
        raise ValueError(f"the requested batch must be at least 1, got {requested}")
    budget = budget or arena_budget(target, headroom, vram)
    if budget.bytes is None:
        return FitResult(target.name, requested, requested, None, budget, "unknown", (),
                         f"no budget to fit against ({budget.source}); returning the requested batch, unplanned")
    tried: list[Trial] = []

    def attempt(batch: int) -> Trial:
        arena = _arena_of(build(batch), target, options, bindings)
        trial = Trial(batch, arena, FitReport.judge(target, arena, budget).fits is True)
        tried.append(trial)
        if on_trial is not None:
            on_trial(trial)
        return trial

    first = attempt(requested)
    if first.fits:
        return _result(target, requested, first, budget, tried, "the requested batch fits")
    fitting, failing = None, first
    batch = requested
    while batch > 1:
        batch = max(batch // 2, 1)
        trial = attempt(batch)
        if trial.fits:
            fitting = trial
            break
        failing = trial
    if fitting is None:
        return FitResult(target.name, requested, None, failing.arena_bytes, budget, False, tuple(tried),
                         f"even batch 1 needs an arena of {failing.arena_bytes} B ({format_bytes(failing.arena_bytes)}), "
                         f"over the budget of {budget.bytes} B ({format_bytes(budget.bytes)})")
    while failing.batch - fitting.batch > 1:
        middle = (fitting.batch + failing.batch) // 2
        trial = attempt(middle)
        if trial.fits:
            fitting = trial
        else:
            failing = trial
    return _result(target, requested, fitting, budget, tried,
                   f"batch {fitting.batch} fits and batch {failing.batch} does not")


def _arena_of(built: Graph | int, target: Target, options: CompileOptions | None,
              bindings: Mapping[str, int] | None) -> int:
    if isinstance(built, int):
        return built
    return plan_arena_bytes(built, target, bindings, options)


def _result(target: Target, requested: int, trial: Trial, budget: Budget, tried: list[Trial], reason: str) -> FitResult:
    return FitResult(target.name, requested, trial.batch, trial.arena_bytes, budget, True, tuple(tried), reason)
