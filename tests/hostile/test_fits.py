"""`fits` is true, false or "unknown" with a reason, the same in every command and its JSON;
a compile that does not fit exits 1 with its report still printed."""

from __future__ import annotations

import json

from rlxir.compiler import ADDRESS_SPACE_64, exceeds_ceiling, fit_verdict
from rlxir.devices import ProbeMiss
from rlxir.target import get_target

BIG = "graph big(N) {\n  input %x : f32[N]\n  %y = exp(%x) : f32[N]\n  output %y\n}\n"


def test_compile_with_no_budget_says_unknown(cli, mlp, monkeypatch):
    monkeypatch.setattr("rlxir.fit.device_capacity", _no_capacity)
    code, out, _ = cli("compile", mlp, "--target", "cuda", "--batch", "4")
    assert code == 0 and "fits         unknown: no budget" in out and "fits         yes" not in out
    code, out, _ = cli("compile", mlp, "--target", "cuda", "--batch", "4", "--json")
    report = json.loads(out)
    assert code == 0 and report["fits"] == "unknown" and "no budget" in report["fits_reason"]


def test_compare_with_no_budget_agrees_with_compile(cli, mlp, monkeypatch):
    monkeypatch.setattr("rlxir.fit.device_capacity", _no_capacity)
    code, out, _ = cli("compare", mlp, "--batch", "4", "--targets", "cuda", "--json")
    row = json.loads(out)[0]
    assert code == 0 and row["fits"] == "unknown" and "no budget" in row["fits_reason"]


def test_fit_with_no_budget_says_unknown(cli, mlp, monkeypatch):
    monkeypatch.setattr("rlxir.fit.device_capacity", _no_capacity)
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
    monkeypatch.setattr("rlxir.fit.device_capacity", _no_capacity)
    code, out, _ = cli("fit", mlp, "--target", "cuda", "--max-batch", "8")
    assert code == 0 and "fits unknown: no budget to fit against" in out and "largest batch that fits" not in out
