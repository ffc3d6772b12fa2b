"""The conformance benches' shared time limit and outcome table."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from rlxir.testing.conformance_report import TimeLimit, outcome_table, time_limit


def test_a_block_past_its_limit_is_stopped_and_the_alarm_cleared():
    with pytest.raises(TimeLimit):
        with time_limit(1):
            time.sleep(3)
    with time_limit(1):
        pass
    time.sleep(1.2)  # no alarm left behind


def test_the_pass_share_counts_only_the_counted_statuses():
    rows = [("all", Counter({"pass": 3, "refused": 1, "no export": 4}))]
    text = outcome_table("suite", rows, ("pass", "refused", "no export"), counted=("pass", "refused"))
    assert text.splitlines()[1].split()[1:] == ["4", "3", "1", "4", "75.0%"]
    markdown = outcome_table("suite", rows, ("pass", "refused", "no export"), markdown=True)
    assert markdown.splitlines()[2] == "| all | 8 | 3 | 1 | 4 | 37.5 |"
