"""bench/liveness_timeline.py: each plan's row gives the same arena as the planner, and
the main thread's calls of the compiled loops lie within the plan they were made for."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rlxir.planning import Buffer
from rlxir.planning.compiled import compiled_placement_available
from rlxir.planning.liveness import LivenessPlanner

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

from synth import synthetic_rows  # noqa: E402  (bench/synth.py)


@pytest.mark.skipif(not compiled_placement_available(), reason="the timeline times the compiled loops")
def test_the_timeline_shows_the_main_threads_placement_within_each_plan():
    done = subprocess.run([sys.executable, str(BENCH / "liveness_timeline.py"), "--buffers", "20000", "--plans", "2"],
                          capture_output=True, text=True, check=True)
    rows = [line.split() for line in done.stdout.splitlines() if line[:4].strip().isdigit()]
    plans = {row[0]: row for row in rows if row[1] == "plan"}
    assert sorted(plans) == ["1", "2"]
    buffers = [Buffer(str(i), lo, hi, size) for i, lo, hi, size in synthetic_rows(20000, seed=1, long_share=0.2)]
    arena = LivenessPlanner().plan(buffers).arena_bytes
    for plan, row in plans.items():
        assert int(row[5].replace(",", "")) == arena
        loops = [r for r in rows if r[0] == plan and r[1] != "plan"]
        assert ["MainThread", "place_run"] in [r[1:3] for r in loops]  # the by-size pass
        for r in loops:
            first, last, inside = float(r[3]), float(r[4]), float(r[6])
            # Printed to the millisecond: a sum of spans may round 1 ms past their extent.
            assert 0 <= first <= last and inside <= last - first + 0.002
            if r[1] == "MainThread":  # a stopped retry may make its last placement after the plan returns
                assert last <= float(row[3])
