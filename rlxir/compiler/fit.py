"""The fit driver: the largest batch whose compiled arena fits a device.

Every number here comes from the target's own compile path (`rlxir.compiler.compile`): the arena
of a batch is what `compile` would plan for it, never an estimate.

The budget it fits against is `rlxir.compiler.budget.arena_budget`'s.

- `fit_batch(target, requested, headroom, build, vram, jobs=1)`: the largest batch in
  1..requested whose arena fits the budget, found by halving then bisecting, with up to
  `jobs` plans at once (`search_batches`).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Mapping

import attrs

from rlxir.compiler.budget import Budget, budget_for
from rlxir.compiler.compile import CompileOptions, FitReport, plan_for_target
from rlxir.compiler.workers import WORKER_FAILED, Workers, can_fork
from rlxir.ir.graph import Graph
from rlxir.targets.devices import format_bytes
from rlxir.targets.target import Target, get_target

@attrs.frozen
class Trial:
    batch: int
    arena_bytes: int
    fits: bool


@attrs.frozen
class FitResult:
    """The answer of `fit_batch`.

    `batch` is the largest batch found to fit (None when even batch 1 does not, or, with
    no budget, the requested batch, unplanned); `tried` lists every batch planned, in the
    order planned; `rounds` counts the waits for plans (with `jobs` 1, one per plan).
    `fits` is True, False, or ``"unknown"`` when there was no budget to fit against.
    """

    target: str
    requested: int
    batch: int | None
    arena_bytes: int | None
    budget: Budget
    fits: bool | str
    tried: tuple
    rounds: int
    jobs: int
    reason: str

    def to_json(self) -> dict:
        return {
            "target": self.target, "requested": self.requested, "batch": self.batch, "fits": self.fits,
            "arena_bytes": self.arena_bytes, "budget_bytes": self.budget.bytes,
            "capacity_bytes": self.budget.capacity_bytes, "ceiling_bytes": self.budget.ceiling_bytes,
            "budget": self.budget.explain(), "reason": self.reason,
            "tried": [attrs.asdict(trial) for trial in self.tried], "rounds": self.rounds, "jobs": self.jobs,
        }


def plan_bound(requested: int) -> int:
    """The most rounds `fit_batch` takes for `requested`, and with one job the most plans:
    2 * ceil(log2(requested)) + 2."""
    return 2 * math.ceil(math.log2(requested)) + 2


def fit_batch(target: str | Target, requested: int, headroom: float, build: Callable[[int], Graph] | Callable[[int], int],
              vram: int | None = None, options: CompileOptions | None = None, budget: Budget | None = None,
              bindings: Mapping[str, int] | None = None, on_trial: Callable[[Trial], None] | None = None,
              jobs: int = 1) -> FitResult:
    """The largest batch in 1..requested whose planned arena fits the budget.

    `build(batch)` returns the graph to compile at that batch (bound, or with `bindings`
    completing it), or directly an arena size in bytes (for tests of the search itself).
    The search brackets by halving from `requested` down, then bisects between the largest
    batch seen to fit and the smallest seen not to: at most `plan_bound(requested)` rounds,
    and the answer is always a batch that was planned and fit. With `jobs` > 1 each round
    plans up to `jobs` batches at once in forked workers (`search_batches`): the answer and
    its reason are the one-job answer whatever the arenas do, found in fewer rounds and
    more plans. When batch 1 does not fit, the result says so with its numbers; with no
    budget known, the requested batch is returned unplanned, and the reason says why.
    """
    target = get_target(target)
    if requested < 1:
        raise ValueError(f"the requested batch must be at least 1, got {requested}")
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    jobs = jobs if can_fork() else 1  # a speculative plan computed here could raise what the search never needs
    budget = budget or budget_for(target, headroom, vram)
    if budget.bytes is None:
        return FitResult(target.name, requested, requested, None, budget, "unknown", (), 0, jobs,
                         f"no budget to fit against ({budget.source}); returning the requested batch, unplanned")

    def arena_at(batch: int) -> int:
        return _arena_of(build(batch), target, options, bindings)

    def judged(batch: int, arena: int) -> Trial:
        return Trial(batch, arena, FitReport.judge(target, arena, budget).fits is True)

    def plan_here(batch: int) -> Trial:
        return judged(batch, arena_at(batch))

    with Workers(arena_at, jobs) as workers:
        def plan_wave(batches: list[int]) -> list[Trial | None]:
            arenas = workers.map(batches, rerun_failures=False)
            return [None if arena is WORKER_FAILED else judged(batch, arena) for batch, arena in zip(batches, arenas)]

        search = search_batches(requested, jobs, plan_here, plan_wave, on_trial)
    fitting, failing = search.fitting, search.failing
    if fitting is None:
        assert failing is not None  # with nothing fitting, the search ends only once batch 1 did not fit
        return FitResult(target.name, requested, None, failing.arena_bytes, budget, False, search.tried, search.rounds,
                         jobs, f"even batch 1 needs an arena of {failing.arena_bytes} B "
                               f"({format_bytes(failing.arena_bytes)}), over the budget of {budget.bytes} B "
                               f"({format_bytes(budget.bytes)})")
    reason = ("the requested batch fits" if failing is None
              else f"batch {fitting.batch} fits and batch {failing.batch} does not")
    return FitResult(target.name, requested, fitting.batch, fitting.arena_bytes, budget, True, search.tried,
                     search.rounds, jobs, reason)


@attrs.frozen
class Search:
    """Where `search_batches` ended: the largest batch seen to fit on its path (None: not
    even batch 1) and the smallest seen not to (None: the requested batch fits), every
    trial in the order planned, and the rounds it waited for plans."""

    fitting: Trial | None
    failing: Trial | None
    tried: tuple
    rounds: int


def search_batches(requested: int, jobs: int, plan_here: Callable[[int], Trial],
                   plan_wave: Callable[[list[int]], list[Trial | None]],
                   on_trial: Callable[[Trial], None] | None = None) -> Search:
    """The serial search (plan `requested`, halve until a batch fits, bisect), walked with
    up to `jobs` plans per round.

    The serial search is a decision tree: its next batch depends only on the largest batch
    that fit and the smallest that did not (`_next_batch`). A round plans, with
    `plan_wave`, the next batch and the `jobs - 1` unplanned batches the tree reaches
    after the fewest further outcomes (`_wave`); then the walk follows every outcome now
    known. Its path, and so its answer, is the serial one for any arenas; plans off the
    path are spent CPU, kept in `tried`. The first round is the requested batch alone. A
    round of one batch, and a batch whose worker
    failed (None from `plan_wave`) once the walk needs it, is planned by `plan_here`, so it
    raises what the serial search raises there.
    """
    report = on_trial if on_trial is not None else (lambda trial: None)
    trials: dict[int, Trial] = {}
    failed: set[int] = set()
    tried: list[Trial] = []
    rounds = 0
    fitting = failing = None
    while (batch := _next_batch(requested, fitting, failing)) is not None:
        if batch in trials:
            fitting, failing = _after(trials[batch], fitting, failing)
            continue
        rounds += 1
        # The requested batch is planned alone: when it fits (a common first answer) the
        # fit costs one plan and forks nothing; workers join from the second round on.
        alone = batch in failed or not trials
        wave = [batch] if alone else _wave(requested, fitting, failing, trials, failed, jobs)
        planned = plan_wave(wave) if len(wave) > 1 else [plan_here(batch)]
        failed.update(wave_batch for wave_batch, trial in zip(wave, planned) if trial is None)
        for trial in [trial for trial in planned if trial is not None]:
            trials[trial.batch] = trial
            tried.append(trial)
            report(trial)
    return Search(fitting, failing, tuple(tried), rounds)


def _next_batch(requested: int, fitting: Trial | None, failing: Trial | None) -> int | None:
    """The batch the serial search plans next, None when it has its answer."""
    if fitting is None:
        if failing is None:
            return requested
        return failing.batch // 2 if failing.batch > 1 else None
    if failing is None:  # the requested batch fits
        return None
    return (fitting.batch + failing.batch) // 2 if failing.batch - fitting.batch > 1 else None


def _after(trial: Trial, fitting: Trial | None, failing: Trial | None) -> tuple[Trial | None, Trial | None]:
    return (trial, failing) if trial.fits else (fitting, trial)


def _wave(requested: int, fitting: Trial | None, failing: Trial | None, trials: Mapping[int, Trial],
          failed: set[int], jobs: int) -> list[int]:
    """Up to `jobs` unplanned batches of the serial decision tree from this state, the next
    batch first, then by how many unknown outcomes lie before them (fewest first; each
    outcome taken as even odds, these are the likeliest to be needed), "does not fit"
    before "fits" among equals (a --max-batch well above the answer makes the halving run
    on). Known outcomes are followed at no cost; a batch whose worker failed is not planned
    again in a wave."""
    order = itertools.count()
    frontier = [(0, next(order), fitting, failing)]
    wave: list[int] = []
    while frontier and len(wave) < jobs:
        unknowns, _, fit_so_far, fail_so_far = heapq.heappop(frontier)
        batch = _next_batch(requested, fit_so_far, fail_so_far)
        if batch is None:
            continue
        if batch in trials:
            heapq.heappush(frontier, (unknowns, next(order), *_after(trials[batch], fit_so_far, fail_so_far)))
            continue
        if batch not in failed and batch not in wave:
            wave.append(batch)
        for fits in (False, True):  # a placeholder outcome: only its batch and verdict steer the tree
            guess = Trial(batch, 0, fits)
            heapq.heappush(frontier, (unknowns + 1, next(order), *_after(guess, fit_so_far, fail_so_far)))
    return wave


def _arena_of(built: Graph | int, target: Target, options: CompileOptions | None,
              bindings: Mapping[str, int] | None) -> int:
    if isinstance(built, int):
        return built
    return plan_for_target(built, target, bindings, options).arena_bytes
