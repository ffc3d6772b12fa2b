"""PyTorch's OpInfo database through the PyTorch importer, a fast subset: the first float32
sample of every Core ATen OpInfo (rlxir.testing.opinfo_conformance; the whole measure is
bench/opinfo_conformance.py). No sample may end as an internal error or a mismatch, and the
passes may not fall below the count measured when the subset last grew
(opinfo_baseline.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("expecttest")  # torch.testing._internal imports it

from rlxir.testing.opinfo_conformance import core_aten_ops, is_core_aten, opinfos, run_sample, samples  # noqa: E402

BASELINE = json.loads((Path(__file__).with_name("opinfo_baseline.json")).read_text())


def core_first_samples() -> list:
    core = core_aten_ops()
    return [found[0] for op in opinfos() if is_core_aten(op, core) for found in [samples(op, 1)] if found]


def test_core_aten_opinfo_first_samples():
    outcomes = [run_sample(sample) for sample in core_first_samples()]
    broken = [f"{outcome.name}: {outcome.status}: {outcome.detail}" for outcome in outcomes
              if outcome.status in ("internal", "mismatch")]
    assert broken == []
    passed = sum(outcome.status == "pass" for outcome in outcomes)
    assert passed >= BASELINE["core_aten_first_sample_pass"], \
        [f"{outcome.name}: {outcome.detail}" for outcome in outcomes if outcome.status == "refused"]
