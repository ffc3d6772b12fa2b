"""Diagnostics on hostile source text: the right character, typo hints only for typos,
line:col for bad bytes, bounded quotes of long lines; BOM and standard input accepted."""

from __future__ import annotations

import io
import sys
from pathlib import Path

from rlxir.errors import quoted_slice

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def source(tmp_path, body: str, name: str = "g.rlx") -> Path:
    path = tmp_path / name
    path.write_text("graph g(B) {\n  input %x : f32[B]\n" + body + "}\n", encoding="utf-8")
    return path


def test_a_non_ascii_value_name_names_the_character(cli, tmp_path):
    path = source(tmp_path, "  %ü = relu(%x) : f32[B]\n  output %ü\n")
    code, _, err = cli("check", path)
    assert code == 1 and "g.rlx:3:4:" in err and "'ü' (U+00FC)" in err and "unexpected character '%'" not in err


def test_no_hint_for_a_name_that_is_no_typo(cli, tmp_path):
    path = source(tmp_path, "  %y = frobnicate(%x) : f32[B]\n  output %y\n")
    code, _, err = cli("check", path)
    assert code == 1 and "unknown op 'frobnicate'" in err and "did you mean" not in err and "rlxir ops" in err


def test_a_hint_for_a_typo(cli, tmp_path):
    path = source(tmp_path, "  %y = rleu(%x) : f32[B]\n  output %y\n")
    code, _, err = cli("check", path)
    assert code == 1 and "did you mean relu?" in err


def test_invalid_utf8_is_located_by_line_and_column(cli, tmp_path):
    path = tmp_path / "latin1.rlx"
    path.write_bytes(b"graph g(B) {\n  input %x : f32[B]\n  # caf\xe9\n  output %x\n}\n")
    code, _, err = cli("check", path)
    assert code == 1 and "latin1.rlx:3:8: syntax error: byte 0xe9 is not UTF-8" in err and "position" not in err


def test_a_megabyte_line_is_quoted_as_a_bounded_slice(cli, tmp_path):
    path = source(tmp_path, "  %y = relu(%x) : f32[B] " + "x" * 1_000_000 + "\n  output %y\n")
    code, _, err = cli("check", path)
    assert code == 1 and "g.rlx:3:26:" in err and len(err) < 1000


def test_the_caret_stays_under_the_column_in_a_slice():
    line = "a" * 500 + "X" + "b" * 500
    text, col = quoted_slice(line, 501)
    assert len(text) <= 126 and text[col - 1] == "X" and text.startswith("...") and text.endswith("...")
    assert quoted_slice("short", 3) == ("short", 3)


def test_a_byte_order_mark_is_accepted(cli, tmp_path):
    path = tmp_path / "bom.rlx"
    path.write_bytes(b"\xef\xbb\xbf" + (EXAMPLES / "mlp.rlx").read_bytes())
    code, out, _ = cli("check", path)
    assert code == 0 and "ok, 1 graph" in out


def test_standard_input_is_read_for_dash(cli, monkeypatch):
    stdin = io.TextIOWrapper(io.BytesIO((EXAMPLES / "mlp.rlx").read_bytes()))
    monkeypatch.setattr(sys, "stdin", stdin)
    code, out, _ = cli("check", "-")
    assert code == 0 and "ok, 1 graph" in out


def test_a_bad_target_option_fails_before_any_pass_runs(cli, tmp_path):
    path = tmp_path / "m.rlx"
    path.write_text((EXAMPLES / "mlp.rlx").read_text())
    code, out, err = cli("opt", path, "-p", "dce,fuse{target=tpu}", "--batch", "1")
    assert code == 1 and out == "" and "<pipeline>:1:17: pipeline error: fuse: unknown target 'tpu'" in err
    assert "reproducer" not in err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_goes_to_a_terminal_only(cli, tmp_path, monkeypatch, capsys):
    from rlxir.cli import progress

    path = tmp_path / "m.rlx"
    path.write_text((EXAMPLES / "mlp.rlx").read_text())
    code, out, err = cli("compile", path, "--target", "cpu", "--batch", "1", "--json")
    assert code == 0 and "\r" not in err and "\r" not in out
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(progress, "PASS_LINES_AFTER_SECONDS", 0.0)
    from rlxir.cli import main

    assert main(["compile", str(path), "--target", "cpu", "--batch", "1", "--json"]) == 0
    shown = terminal.getvalue()
    assert "parsing" in shown and "compiling for cpu: pass 1/" in shown and "planning" in shown
    assert shown.endswith("\r\033[K") and "\r" not in capsys.readouterr().out
