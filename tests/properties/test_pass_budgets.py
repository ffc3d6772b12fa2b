"""Every built-in pass has a graph strategy, and the strategy exercises the pass.

A property test says little about a pass that leaves most of its random graphs as they
were. So each built-in pass has a strategy in `rlxir.testing.pass_graphs.PASS_GRAPHS`,
and here the pass runs on `DRAWS` graphs drawn from it with a fixed seed and must change
(the printed graph) at least `LEAST_CHANGED` of them. A pass added without a strategy, or
a strategy whose pattern the pass no longer finds, fails here rather than passing
untested.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from rlxir.pass_machinery.pass_base import PassContext, available_passes
from rlxir.pass_machinery.pipeline import run_pipeline
from rlxir.ir.printer import print_graph
from rlxir.targets.target import get_target
from rlxir.testing.pass_graphs import PASS_GRAPHS, pass_graphs

DRAWS = 24
LEAST_CHANGED = Fraction(1, 3)
TARGETS = ("cpu", "cuda", "rocm", "metal", "gpu", "vulkan")
"""The passes that read a target get one of these with each graph."""

BUILT_IN = sorted(name for name, cls in available_passes().items() if cls.__module__.startswith("rlxir.passes."))


def test_every_strategy_names_a_built_in_pass():
    assert sorted(set(PASS_GRAPHS) - set(BUILT_IN)) == []


def test_asking_for_a_pass_without_a_strategy_names_the_known_ones():
    with pytest.raises(KeyError, match="no graph strategy for pass 'frobnicate'; PASS_GRAPHS has: .*cse"):
        pass_graphs("frobnicate")


@pytest.mark.parametrize("name", BUILT_IN)
def test_the_strategy_of_each_pass_makes_it_change_the_graph(name):
    strategy = pass_graphs(name)  # a pass without one fails here
    changed: list[bool] = []

    @settings(max_examples=DRAWS, derandomize=True, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(graph=strategy, target=st.sampled_from(TARGETS))
    def run_on_drawn_graphs(graph, target):
        before = print_graph(graph)
        result = run_pipeline(graph, name, ctx=PassContext(target=get_target(target)))
        changed.append(print_graph(result) != before)

    run_on_drawn_graphs()
    assert len(changed) == DRAWS
    assert Fraction(sum(changed), len(changed)) >= LEAST_CHANGED, (
        f"{name} changed {sum(changed)} of {len(changed)} graphs drawn from PASS_GRAPHS[{name!r}]; "
        f"make its pattern likelier there")
