"""`fits` is true, false or "unknown" with a reason, the same in every command and its JSON;
a compile that does not fit exits 1 with its report still printed."""

from __future__ import annotations

import json

import attrs
import pytest

import rlxir
from rlxir.compiler.compile import (ADDRESS_SPACE_64, ArenaTooLarge, FitReport, compile, exceeds_ceiling, fit_verdict,
                            plan_compile)
from rlxir.targets.devices import ProbeMiss, format_bytes
from rlxir.compiler.budget import arena_budget
from rlxir.compiler.fit import fit_batch
from rlxir.targets.target import get_target

BIG = "graph big(N) {\n  input %x : f32[N]\n  %y = exp(%x) : f32[N]\n  output %y\n}\n"


def test_compile_with_no_budget_says_unknown(cli, mlp, monkeypatch):
    monkeypatch.setattr("rlxir.compiler.budget.device_capacity", _no_capacity)
    code, out, _ = cli("compile", mlp, "--target", "cuda", "--batch", "4")
    assert code == 0 and "fits         unknown: no budget" in out and "fits         yes" not in out
    code, out, _ = cli("compile", mlp, "--target", "cuda", "--batch", "4", "--json")
    report = json.loads(out)
    assert code == 0 and report["fits"] == "unknown" and "no budget" in report["fits_reason"]


def test_compare_with_no_budget_agrees_with_compile(cli, mlp, monkeypatch):
    monkeypatch.setattr("rlxir.compiler.budget.device_capacity", _no_capacity)
    code, out, _ = cli("compare", mlp, "--batch", "4", "--targets", "cuda", "--json")
    row = json.loads(out)[0]
    assert code == 0 and row["fits"] == "unknown" and "no budget" in row["fits_reason"]


def test_fit_with_no_budget_says_unknown(cli, mlp, monkeypatch):
    monkeypatch.setattr("rlxir.compiler.budget.device_capacity", _no_capacity)
    code, out, _ = cli("fit", mlp, "--target", "cuda", "--max-batch", "8", "--json")
    assert code == 0 and json.loads(out)["fits"] == "unknown"


def test_compile_over_a_known_budget_exits_1_with_the_report(cli, mlp):
    code, out, err = cli("compile", mlp, "--target", "cuda", "--batch", "4", "--vram", "1MiB", "--json")
    report = json.loads(out)
    assert code == 1 and report["fits"] is False and report["fits_reason"].startswith("over the budget")
    assert "cuda cannot fit this graph" in err


def test_compile_within_a_known_budget_exits_0(cli, mlp):
    code, out, _ = cli("compile", mlp, "--target", "cuda", "--batch", "4", "--vram", "24GiB")
    assert code == 0 and "fits         yes" in out


def test_compare_uses_the_same_values(cli, mlp):
    code, out, _ = cli("compare", mlp, "--batch", "4", "--vram", "1MiB", "--json")
    rows = json.loads(out)
    assert code == 0 and {row["fits"] for row in rows} == {False}


def test_a_64_bit_target_refuses_an_arena_past_2_to_the_64(cli, tmp_path):
    source = tmp_path / "big.rlx"
    source.write_text(BIG)
    code, out, err = cli("compile", source, "--target", "cuda", "-D", "N=4611686018427387904", "--json")
    report = json.loads(out)
    assert code == 1 and report["refused"] is True and report["fits"] is False
    assert "64-bit offset" in report["fits_reason"] and "cuda refuses this graph" in err


def test_the_verdict_is_one_function():
    cuda = get_target("cuda")
    assert exceeds_ceiling(cuda, ADDRESS_SPACE_64 + 1) and not exceeds_ceiling(cuda, ADDRESS_SPACE_64)
    assert fit_verdict(cuda, 10, None)[0] == "unknown"
    assert fit_verdict(cuda, 10, 10) == (True, "within the budget of 10 B (10 B)")
    assert fit_verdict(cuda, 11, 10)[0] is False


def _no_capacity(target, sources=None):
    # As on a machine without the device: the probe finds nothing.
    return ProbeMiss("nvml", ("no device in this test",))


def test_fit_with_no_budget_says_unknown_in_words(cli, mlp, monkeypatch):
    monkeypatch.setattr("rlxir.compiler.budget.device_capacity", _no_capacity)
    code, out, _ = cli("fit", mlp, "--target", "cuda", "--max-batch", "8")
    assert code == 0 and "fits unknown: no budget to fit against" in out and "largest batch that fits" not in out


def test_the_report_refuses_with_the_compile_s_own_message():
    rocm = get_target("rocm")
    graph = rlxir.parse(BIG.replace("big(N)", "big(N=2000000000)")).main
    planned = plan_compile(graph, rocm)  # what compile would raise on, still reported
    with pytest.raises(ArenaTooLarge) as refusal:
        compile(graph, rocm)
    report = FitReport.judge(rocm, planned.arena_bytes, arena_budget(rocm, vram=2**40))
    assert report.refused and report.fits is False and report.reason.startswith("past the rocm ABI ceiling")
    error = report.error("this graph")
    assert isinstance(error, ArenaTooLarge) and error.message == refusal.value.message
    assert error.expected.endswith("finds the largest that fits)")
    assert report.to_json()["refused"] is True and "refused" not in report.to_json(brief=True)


def test_the_report_over_a_budget_and_within_it():
    cuda = get_target("cuda")
    budget = arena_budget(cuda, vram=100 * 2**20)
    over = FitReport.judge(cuda, budget.bytes + 1, budget)
    assert not over.refused and over.fits is False and over.text().startswith("no: over the budget")
    assert over.error("this graph").message == (f"cuda cannot fit this graph: its arena needs {budget.bytes + 1} B "
                                                f"({format_bytes(budget.bytes + 1)}), {over.reason}")
    within = FitReport.judge(cuda, budget.bytes, budget)
    assert within.fits is True and within.text() == "yes" and within.error() is None
    unknown = FitReport.judge(cuda, 10, attrs.evolve(budget, bytes=None))
    assert unknown.fits == "unknown" and unknown.error() is None


def test_fit_never_calls_an_arena_the_compile_refuses_a_fit():
    # A 64-bit target cannot address past 2^64 - 1, whatever budget --vram gives.
    cuda = get_target("cuda")
    budget = arena_budget(cuda, headroom=1.0, vram=2**66)
    assert budget.bytes > 2**64
    result = fit_batch(cuda, 4, 1.0, lambda batch: batch * 2**62, budget=budget)  # batch 4: 2^64 bytes
    assert result.batch == 3 and [(trial.batch, trial.fits) for trial in result.tried] == [(4, False), (2, True),
                                                                                          (3, True)]
