"""The `best` planner: the strongest placement found within a time budget."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import attrs
import numpy as np

from rlxir.planning.buffers import Buffer, PlanResult, ProgressSink, placed_share
from rlxir.planning.bump import bump_offsets
from rlxir.planning.greedy import place_in_order
from rlxir.planning.orderings import by_area, by_size, by_size_then_lifetime, peak_first
from rlxir.planning.problem import Problem
from rlxir.planning.reorder import reorder_dives
from rlxir.planning.search import HEURISTICS, CanonicalSearch, preorder
from rlxir.planning.search_compiled import compiled_if_ready
from rlxir.planning.sweep import peak_sweep_best_fit, sweep_best_fit

DEFAULT_TIME_BUDGET = 4.5
"""Seconds `best` spends when it is given no time budget."""

# Share of the time left after the greedy passes that goes to reordering dives
# (`reorder_dives`) before the bisection search gets the rest (tuned on MiniMalloc's
# challenging set: the dives found the better plans on E-K, the search on C and J).
_REORDER_SHARE = 0.6

# Failed capacities per bisection round before the node limit doubles.
_FAILED_STEPS = 6

# Random preorders join the fixed heuristics once the node limit reaches this many nodes
# per buffer (earlier, they only dilute the rounds; tuned on the MiniMalloc set).
_RANDOM_ORDERS_FROM = 16

# Greedy orders tried after `by_size` (the liveness order), most useful first.
_GREEDY_ORDERS: tuple[Callable[[Problem], list[int]], ...] = (
    lambda problem: peak_first(problem, "start"),
    lambda problem: peak_first(problem, "end"),
    lambda problem: peak_first(problem, "lifetime"),
    by_size_then_lifetime,
    by_area,
)


@attrs.frozen
class _Incumbent:
    offsets: list[int]
    arena: int


class _Status:
    """Formats the one-line progress of a `best` run for its `progress` sink."""

    def __init__(self, sink: ProgressSink | None, started: float, budget: float, lower: int):
        self.sink, self.started, self.budget, self.lower = sink, started, budget, lower

    def say(self, doing: str, best: _Incumbent | None) -> None:
        if self.sink is None:
            return
        elapsed = time.perf_counter() - self.started
        ratio = f", best {best.arena / self.lower:.4f}x the lower bound" if best is not None and self.lower else ""
        self.sink(f"best: {doing}{ratio} ({elapsed:.1f} s of {self.budget:.1f} s)")

    def placing(self, what: str, best: _Incumbent | None) -> Callable[[int, int], None] | None:
        """A `progress(placed, total)` callback for one placement pass."""
        if self.sink is None:
            return None
        return lambda placed, total: self.say(f"{what}, {placed_share(placed, total)}", best)


@attrs.frozen
class BestPlanner:
    """Never worse than `liveness`, and as close to the lower bound as the budget allows.

    1. A schedule-order best-fit pass (`sweep_best_fit`, O(n log n)), or with imposed
       offsets the `bump` plan: a valid plan in hand from the start; then, without
       imposed offsets, the same pass run outward from the peak slot
       (`peak_sweep_best_fit`, as cheap; on idealloc's S_1 1.0085x the lower bound
       against 1.26x), the smaller arena kept.
    2. The `liveness` placement (greedy by size, best fit).
    3. Other greedy orders through the same best-fit placement (peak-first, by lifetime,
       by area), each started only if it is expected to finish within the budget.
    4. On instances of at most `search_max_buffers` buffers without imposed offsets:
       first, for 60 % of the time left, a local search over the order in which
       canonical dives place the buffers (`reorder_dives`); then a
       MiniMalloc-style search (`CanonicalSearch`) that asks "does it fit in capacity C?",
       bisecting C between the lower bound and the best arena so far (compiled where
       its loop is ready: `compiled_if_ready`, the same nodes); round robin over
       a preorder guided by the best plan so far (buffers by their offset in it, which
       the search's first dive rebuilds pressed down), the preorder heuristics, then
       seeded random ones; the node limit per attempt doubles each round.

    Every phase reads the clock as it goes (every few thousand placements, every 64
    search nodes) and the planner returns the smallest arena found when the budget runs
    out, even inside step 2: then the plan is step 1's, worse than `liveness`. Past the
    budget it spends only what no plan can skip: checking the buffers and slot-compressing
    them (`Problem.build`, O(n log n), about 0.1 s per 10^5 buffers) and, if the budget
    ran out inside step 1, stacking the buffers not placed yet (O(n)).

    Stops as soon as an arena equals the lower bound (it is then optimal). Deterministic
    for a given `seed` and `max_search_nodes` whenever the time budget does not bind; when
    it binds, how far the search got depends on the machine's speed.
    """

    name: str = "best"
    default_budget: float = DEFAULT_TIME_BUDGET
    """Seconds to spend when `plan` is not given a `time_budget`."""
    seed: int = 0
    """Seed of the random preorders the search uses once the fixed heuristics are tried."""
    search_max_buffers: int = 3000
    """Largest instance the search runs on (it keeps an n x n overlap matrix, and each
    search node costs O(n))."""
    max_search_nodes: int | None = None
    """Cap on the total search nodes (None: only the time budget limits the search)."""

    def plan(self, buffers: Sequence[Buffer], alignment: int = 1, time_budget: float | None = None,
             progress: ProgressSink | None = None) -> PlanResult:
        """Place `buffers` at `alignment` within about `time_budget` seconds (default `default_budget`).

        `progress` receives a status line (phase, share done, best ratio so far) every few
        milliseconds of work; the caller throttles it.
        """
        started = time.perf_counter()
        budget = self.default_budget if time_budget is None else time_budget
        deadline = started + budget
        problem = Problem.build(buffers, alignment)
        lower = problem.lower_bound_bytes()
        status = _Status(progress, started, budget, lower)
        first_started = time.perf_counter()
        best = _first_plan(problem, deadline, status)
        # A greedy pass costs several schedule-order passes: the first sets the floor.
        one_pass = time.perf_counter() - first_started
        best = _peak_plan(problem, lower, best, one_pass, deadline, status)
        best, one_pass = self._best_greedy(problem, lower, best, one_pass, deadline, status)
        # Setting the search up (an n x n overlap matrix, the preorders) costs about a pass.
        if best.arena > lower and self._searchable(problem) and time.perf_counter() + one_pass < deadline:
            best = _Bisection(problem, lower, best, deadline, self.seed, self.max_search_nodes, status).run()
        return problem.result(best.offsets, self.name, time.perf_counter() - started)

    def _best_greedy(
        self, problem: Problem, lower: int, best: _Incumbent, one_pass: float, deadline: float, status: _Status
    ) -> tuple[_Incumbent, float]:
        """Try the greedy orders, `by_size` first; start each only if `one_pass` seconds
        (what the last pass cost, at first the schedule-order pass) fit before `deadline`.
        Returns the best plan and what the last finished pass cost."""
        orders = (by_size, *_GREEDY_ORDERS)
        for number, order in enumerate(orders, start=1):
            # Greedy passes cost about the same; the first costs more than the sweep.
            if best.arena == lower or time.perf_counter() + (1.0 if number == 1 else 1.2) * one_pass > deadline:
                break
            pass_started = time.perf_counter()
            what = f"greedy order {number}/{len(orders)}"
            offsets = place_in_order(problem, order(problem), deadline, status.placing(what, best))
            if offsets is None:
                break  # out of time inside the pass
            one_pass = time.perf_counter() - pass_started
            candidate = _Incumbent(offsets, _arena(problem, offsets))
            if candidate.arena < best.arena:
                best = candidate
        return best, one_pass

    def _searchable(self, problem: Problem) -> bool:
        no_fixed = not problem.has_fixed()
        return no_fixed and problem.int64_safe and 0 < len(problem) <= self.search_max_buffers


def _first_plan(problem: Problem, deadline: float, status: _Status) -> _Incumbent:
    """The plan in hand before any other: the schedule-order pass, or `bump` with imposed
    offsets (the pass does not place around them)."""
    if problem.has_fixed():
        offsets = bump_offsets(problem)
    else:
        offsets = sweep_best_fit(problem, deadline, status.placing("schedule-order pass", None))
    return _Incumbent(offsets, _arena(problem, offsets))


def _peak_plan(
    problem: Problem, lower: int, best: _Incumbent, one_pass: float, deadline: float, status: _Status
) -> _Incumbent:
    """The better of `best` and the pass outward from the peak (`peak_sweep_best_fit`),
    which costs about as much as the first pass (`one_pass` seconds) and is started only
    if that much time is left."""
    if best.arena == lower or problem.has_fixed():
        return best
    if time.perf_counter() + one_pass > deadline:
        return best
    status.say("pass outward from the peak", best)
    offsets = peak_sweep_best_fit(problem, deadline)
    if offsets is None:
        return best
    candidate = _Incumbent(offsets, _arena(problem, offsets))
    return candidate if candidate.arena < best.arena else best


def _guided_order(offsets: Sequence[int], tie_order: list[int]) -> list[int]:
    """Buffers by their offset in a known plan, ties in `tie_order`: the search's first
    dive then rebuilds that plan pressed down, and its backtracking explores near it."""
    position = [0] * len(tie_order)
    for rank, index in enumerate(tie_order):
        position[index] = rank
    return sorted(range(len(tie_order)), key=lambda index: (offsets[index], position[index]))


def _arena(problem: Problem, offsets: Sequence[int]) -> int:
    return max((o + s for o, s in zip(offsets, problem.sizes)), default=0)


class _Bisection:
    """Anytime search: bisect the capacity, doubling the node limit each round."""

    def __init__(
        self,
        problem: Problem,
        lower: int,
        incumbent: _Incumbent,
        deadline: float,
        seed: int,
        max_nodes: int | None,
        status: _Status,
    ):
        self.problem = problem
        self.status = status
        self.lower = lower
        self.best = incumbent
        self.deadline = deadline
        self.nodes_left = max_nodes
        self.search = CanonicalSearch(problem)
        self.orders = [preorder(problem, heuristic) for heuristic in HEURISTICS]
        self.rng = np.random.default_rng(seed)
        # First in the round robin: the best plan so far, as a preorder (see `_guided_order`).
        self.orders.insert(0, _guided_order(incumbent.offsets, self.orders[0]))

    def run(self) -> _Incumbent:
        """Improve the incumbent until it reaches the lower bound or the budget runs out.

        First `_REORDER_SHARE` of the time left goes to a local search over the order of
        canonical dives (`_reorder`); the search's rounds get the rest. Each round first asks for the lower bound itself (the answer on most hard
        instances, when enough nodes are allowed), then bisects between it and the
        incumbent; the node limit doubles from round to round, and once it is large, each
        round also adds a seeded random preorder to the round robin.
        """
        self._reorder(time.perf_counter() + _REORDER_SHARE * (self.deadline - time.perf_counter()))
        self._bisect_rounds()
        return self.best

    def _reorder(self, until: float) -> None:
        """Local search over dive orders (`reorder_dives`) until `until`, from the first
        heuristic preorder (from the greedy plans' order it ended about 10 % higher on E and K).
        With a node cap, a dive counts as one node per buffer and gets half the cap."""
        if self.best.arena == self.lower or not self._budget_left():
            return
        n = len(self.problem)
        self.status.say("reordering dives", self.best)
        max_dives = None if self.nodes_left is None else max(1, self.nodes_left // (2 * n))
        found, dives = reorder_dives(
            self.problem, self.search.overlaps, self.orders[1], self.lower, until, self.rng, max_dives
        )
        if self.nodes_left is not None:
            self.nodes_left -= dives * n
        arena = _arena(self.problem, found)
        if arena < self.best.arena:
            self.best = _Incumbent(found, arena)
            self.orders[0] = _guided_order(found, self.orders[1])

    def _bisect_rounds(self) -> None:
        """The search's rounds, until the budget runs out."""
        node_limit = 2 * len(self.problem)
        # Loading the compiled loop (about 0.4 s) waits until the dives are done.
        self.search = compiled_if_ready(self.search, self.problem)
        while self._budget_left() and self.best.arena > self.lower:
            self._improve(self.lower, node_limit)
            self._bisect(node_limit)
            node_limit *= 2
            if node_limit >= _RANDOM_ORDERS_FROM * len(self.problem):
                self._add_random_preorder()

    def _budget_left(self) -> bool:
        nodes_ok = self.nodes_left is None or self.nodes_left > 0
        return nodes_ok and time.perf_counter() < self.deadline

    def _bisect(self, node_limit: int) -> None:
        """Bisect the capacity between the lower bound and the incumbent.

        A capacity where no search succeeded counts as infeasible for this round only; the
        next round, with more nodes, starts again from the lower bound. At most
        `_FAILED_STEPS` failures per round, so rounds stay short and limits grow.
        """
        alignment = self.problem.alignment
        infeasible_below = self.lower + alignment
        failures = 0
        while failures < _FAILED_STEPS and self._budget_left() and infeasible_below < self.best.arena:
            middle = (infeasible_below + self.best.arena - 1) // 2
            capacity = max(infeasible_below, middle // alignment * alignment)
            if not self._improve(capacity, node_limit):
                infeasible_below = capacity + alignment
                failures += 1

    def _improve(self, capacity: int, node_limit: int) -> bool:
        """Search for a placement within `capacity`; keep it if found."""
        found = self._try_capacity(capacity, node_limit)
        if found is None:
            return False
        self.best = _Incumbent(found, _arena(self.problem, found))
        self.orders[0] = _guided_order(found, self.orders[1])
        return True

    def _try_capacity(self, capacity: int, node_limit: int) -> list[int] | None:
        share = capacity / self.lower if self.lower else 1.0
        for number, order in enumerate(self.orders, start=1):
            if not self._budget_left():
                return None
            self.status.say(f"search at {share:.4f}x the lower bound, preorder {number}/{len(self.orders)}, "
                            f"{node_limit} nodes", self.best)
            limit = node_limit if self.nodes_left is None else min(node_limit, self.nodes_left)
            found = self.search.solve(capacity, order, limit, self.deadline)
            if self.nodes_left is not None:
                self.nodes_left -= self.search.nodes
            if found is not None:
                return found
        return None

    def _add_random_preorder(self) -> None:
        heuristic = HEURISTICS[len(self.orders) % len(HEURISTICS)]
        self.orders.append(preorder(self.problem, heuristic, self.rng))
