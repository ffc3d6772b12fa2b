"""Bad options and inputs end in exit 1 or 2 with an explanation, never exit 3."""

from __future__ import annotations

import sys

import pytest


@pytest.mark.parametrize(("plugin", "message"), [
    ("", "cannot load plugin '': not an absolute module name"),
    ("..x", "cannot load plugin '..x': not an absolute module name"),
    ("no_such_plugin_module", "cannot load plugin 'no_such_plugin_module'"),
])
def test_a_bad_plugin_name(cli, mlp, plugin, message):
    code, _, err = cli("opt", mlp, "-p", "dce", "--plugin", plugin)
    assert code == 1 and message in err


def test_a_plugin_that_raises_while_loading(cli, mlp, tmp_path, monkeypatch):
    (tmp_path / "exploding_plugin.py").write_text("raise RuntimeError('boom at import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, _, err = cli("opt", mlp, "-p", "dce", "--plugin", "exploding_plugin")
    assert code == 1 and "plugin 'exploding_plugin' failed while loading: RuntimeError: boom at import" in err
    sys.modules.pop("exploding_plugin", None)


def test_a_400_digit_vram_is_a_usage_error(cli, mlp):
    code, _, err = cli("fit", mlp, "--target", "cuda", "--max-batch", "8", "--vram", "9" * 400)
    assert code == 2 and "at most 2^64 - 1" in err and "9" * 100 not in err


def test_vram_is_exact_for_long_digit_strings():
    from rlxir.targets.devices import parse_bytes

    assert parse_bytes("18446744073709551615") == 2**64 - 1
    assert parse_bytes("1.5GiB") == 3 << 29
    with pytest.raises(ValueError):
        parse_bytes("２４GiB")


@pytest.mark.parametrize("value", ["４", "9223372036854775808", "1_000", "0", "-3"])
def test_batch_values_a_file_could_not_hold_are_usage_errors(cli, mlp, value):
    code, _, err = cli("compile", mlp, "--target", "cpu", "--batch", value)
    assert code == 2 and "--batch" in err


@pytest.mark.parametrize("binding", ["B=４", "B=9223372036854775808"])
def test_define_values_a_file_could_not_hold_are_usage_errors(cli, mlp, binding):
    code, _, err = cli("compile", mlp, "--target", "cpu", "-D", binding)
    assert code == 2 and "-D" in err


def test_batch_and_define_that_disagree(cli, mlp):
    code, _, err = cli("compile", mlp, "--target", "cpu", "--batch", "2", "-D", "B=3")
    assert code == 1 and "--batch 2 and -D B=3 disagree" in err


def test_fit_given_the_batch_symbol_with_define(cli, mlp):
    code, _, err = cli("fit", mlp, "--target", "cuda", "--max-batch", "8", "--vram", "24GiB", "-D", "B=4")
    assert code == 1 and "fit chooses the batch symbol B itself" in err and "has no symbol" not in err


def test_running_tensors_larger_than_memory(cli, tmp_path):
    source = tmp_path / "big.rlx"
    source.write_text("graph g() {\n  input %x : f32[4294967296, 4294967296]\n"
                      "  %y = relu(%x) : f32[4294967296, 4294967296]\n  output %y\n}\n")
    code, _, err = cli("run", source)
    assert code == 1 and "big.rlx:2:9:" in err and "the reference interpreter cannot hold it" in err


@pytest.mark.parametrize("budget", ["-1", "nan", "inf", "0"])
def test_time_budget_must_be_finite_and_positive(cli, mlp, budget):
    code, _, err = cli("compile", mlp, "--target", "cpu", "--batch", "1", "--time-budget", budget)
    assert code == 2 and "--time-budget" in err


def test_an_interrupt_inside_a_compiled_planning_pass_is_exit_130(cli, tmp_path, monkeypatch):
    # Ctrl-C that lands inside Numba's dispatcher reaches Python as a SystemError caused by
    # the KeyboardInterrupt; the command still ends as interrupted, not as a bug.
    from rlxir.planning import compiled

    if not compiled.compiled_placement_available():
        pytest.skip("Numba does not import here")

    def interrupted(*args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as interrupt:
            raise SystemError("place_run returned a result with an exception set") from interrupt

    monkeypatch.setattr(compiled, "COMPILED_FROM", 10)
    monkeypatch.setattr(compiled._kernels(), "place_run", interrupted)
    rows = ["id,lower,upper,size"] + [f"{k},{k},{k + 1 + k % 7},{64 * (1 + k % 5)}" for k in range(200)]
    path = tmp_path / "buffers.csv"
    path.write_text("\n".join(rows) + "\n")
    code, _, err = cli("plan-csv", path, "--planner", "liveness")
    assert code == 130 and err.strip() == "interrupted"
