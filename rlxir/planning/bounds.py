"""The lower bound on any arena: the peak of simultaneously live bytes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rlxir.planning.buffers import Buffer
from rlxir.planning.problem import Problem


def lower_bound(buffers: Sequence[Buffer], alignment: int = 1) -> int:
    """Peak over time of the sum of aligned sizes of the buffers live at that time.

    Every plan's arena is at least this, since the buffers live at one instant must all
    hold disjoint addresses. 0 for an empty list. O(n log n) (a sort of the start times,
    then a prefix sum over them).
    """
    return Problem.build(buffers, alignment).lower_bound_bytes()


def peak_slot(problem: Problem) -> int:
    """The first slot where the live bytes reach the lower bound; -1 if there are none."""
    live = problem.live_bytes_per_slot()
    if len(live) == 0:
        return -1
    return int(np.argmax(live))
