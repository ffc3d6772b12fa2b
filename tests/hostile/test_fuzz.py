"""Fuzzing the commands that read text: any bytes end in exit 0 or 1, never a traceback
or an internal error (exit 3)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlxir.cli import main

MLP = (Path(__file__).resolve().parents[2] / "examples" / "mlp.rlx").read_bytes()
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def run_on(tmp_path, capsys, data: bytes, *command) -> int:
    path = tmp_path / "fuzz.rlx"
    path.write_bytes(data)
    code = main([command[0], str(path), *command[1:]])
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    return code


@FUZZ
@given(position=st.integers(0, len(MLP)), cut=st.integers(0, 40), insert=st.binary(max_size=12))
def test_check_on_a_mutated_file(tmp_path, capsys, position, cut, insert):
    data = MLP[:position] + insert + MLP[position + cut:]
    assert run_on(tmp_path, capsys, data, "check", "--batch", "2") in (0, 1)


@FUZZ
@given(data=st.binary(max_size=200))
def test_check_on_random_bytes(tmp_path, capsys, data):
    assert run_on(tmp_path, capsys, data, "check") in (0, 1)


@FUZZ
@given(position=st.integers(0, len(MLP)), insert=st.sampled_from(
    [b"%", b"\xc3\xbc", b"\xef\xbb\xbf", b"-3", b"18446744073709551616", b"{", b"}", b"f32[", b"#", b"\n", b"\x00"]))
def test_compile_on_a_file_with_a_hostile_fragment(tmp_path, capsys, position, insert):
    data = MLP[:position] + insert + MLP[position:]
    assert run_on(tmp_path, capsys, data, "compile", "--target", "cpu", "--batch", "1", "--json") in (0, 1)
