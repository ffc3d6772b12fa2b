"""PyTorch's OpInfo database through the PyTorch importer, a fast subset: the first float32
sample of every Core ATen OpInfo (rlxir.testing.opinfo_conformance; the whole measure is
bench/opinfo_conformance.py), in four shards so the suite's workers share them. No sample
may end as an internal error or a mismatch, and every sample recorded as passing in
opinfo_baseline.json must still pass: its "passing" Core ATen first samples, and its
"passing_beyond_core" samples of other OpInfos (the ones that reach the IR's eigvals,
polynomial_recurrence, bitcast and reduce_xor ops and complex128 / complex32 pairs)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("expecttest")  # torch.testing._internal imports it

from rlxir.testing.opinfo_conformance import (core_aten_ops, is_core_aten, op_name, opinfos, run_sample,  # noqa: E402
                                              samples)

BASELINE = Path(__file__).with_name("opinfo_baseline.json")
SHARDS = 4


@lru_cache(maxsize=1)
def core_first_samples() -> tuple:
    core = core_aten_ops()
    return tuple(found[0] for op in opinfos() if is_core_aten(op, core) for found in [samples(op, 1)] if found)


@pytest.mark.parametrize("shard", range(SHARDS))
def test_core_aten_opinfo_first_samples(shard):
    chosen = core_first_samples()[shard::SHARDS]
    assert chosen
    outcomes = [run_sample(sample) for sample in chosen]
    broken = [f"{outcome.name}: {outcome.status}: {outcome.detail}" for outcome in outcomes
              if outcome.status in ("internal", "mismatch")]
    assert broken == []
    recorded = set(json.loads(BASELINE.read_text())["passing"])
    names = {outcome.name for outcome in outcomes}
    passing = {outcome.name for outcome in outcomes if outcome.status == "pass"}
    lost = sorted((recorded & names) - passing)
    assert lost == [], [f"{outcome.name}: {outcome.detail}" for outcome in outcomes if outcome.name in lost]


def test_the_baseline_names_samples_of_the_subset():
    names = {sample.name for sample in core_first_samples()}
    recorded = set(json.loads(BASELINE.read_text())["passing"])
    assert recorded and recorded <= names, sorted(recorded - names)


def test_a_result_that_float64_confirms_passes_where_float32_pytorch_is_off():
    """matrix_exp's second sample: eager float32 PyTorch is off by more than the tolerance
    where the import (computed in f64) agrees with eager float64."""
    (op,) = opinfos("matrix_exp")
    outcomes = [run_sample(sample) for sample in samples(op)]
    assert [outcome.status for outcome in outcomes] == ["pass", "pass"], outcomes
    assert any("agrees with eager float64, which eager float32 does not" in outcome.detail for outcome in outcomes)


def _recorded_beyond_core() -> list[str]:
    return json.loads(BASELINE.read_text())["passing_beyond_core"]


@pytest.mark.parametrize("name", _recorded_beyond_core())
def test_recorded_samples_beyond_core_aten_still_pass(name):
    op_part, index = name[:-1].split("[")
    (op,) = [op for op in opinfos(op_part) if op_name(op) == op_part]
    outcome = run_sample(samples(op)[int(index)])
    assert outcome.status == "pass", f"{outcome.name}: {outcome.status}: {outcome.detail}"
