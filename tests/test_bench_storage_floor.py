"""bench/storage_floor.py: the storage it times is the parsed graph's, keyed either way, and
its table gives each figure's growth from the previous size."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest

import rlxir

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import storage_floor  # noqa: E402  (bench/storage_floor.py)


@pytest.mark.parametrize("generator", ["mlp", "wide", "train"])
def test_both_keys_walk_every_value_and_edge_of_the_parsed_graph(tmp_path, generator):
    path = tmp_path / f"{generator}.rlx"
    path.write_text(storage_floor.TEXTS[generator](300, 2))
    graph = rlxir.parse(path.read_text()).main
    # What one walk reads: each value's op, and for each distinct operand its reader count.
    one_walk = sum(len(graph.op(name)) + sum(len(graph.edge_targets(operand)) for operand in set(graph.operands(name)))
                   for name in graph.schedule())
    by_name = json.loads(storage_floor.storage_seconds(str(path), "name", 3))
    by_int = json.loads(storage_floor.storage_seconds(str(path), "int", 3))
    assert gc.isenabled()  # off only while it timed
    assert by_name["values"] == by_int["values"] == len(graph.schedule())
    assert by_name["checksum"] == by_int["checksum"] == 3 * one_walk
    assert by_name["lookups_s"] >= 0 and by_int["lookups_s"] >= 0


def test_the_table_gives_a_growth_from_the_previous_size_of_each_text():
    done = subprocess.run([sys.executable, str(BENCH / "storage_floor.py"), "--sizes", "100", "1000", "--generators",
                           "mlp", "gpt", "--repeat", "1", "--walks", "1", "--no-pipeline", "--json"],
                          capture_output=True, text=True, check=True)
    rows = json.loads(done.stdout)
    assert [row["generator"] for row in rows] == ["mlp", "mlp", "gpt", "gpt"]
    assert [row["statements"] for row in rows[:2]] == [100, 1000]  # the held-out texts are exact
    for first, second in (rows[0:2], rows[2:4]):
        assert "name_walks_growth" not in first and "pipeline_s" not in first
        assert second["int_lookups_growth"] == pytest.approx(
            (second["int_lookups_s"] / first["int_lookups_s"]) ** (1 / storage_floor._decades(first["statements"],
                                                                                             second["statements"])))
        assert second["name_walks_growth"] == pytest.approx(
            (second["name_walks_s"] / first["name_walks_s"]) ** (1 / storage_floor._decades(first["statements"],
                                                                                           second["statements"])))
