"""Every file under tests/malformed/ fails with the diagnostic it declares.

A file's first line is ``# ERROR LINE:COL TEXT``: parsing it must raise an `RlxError` (never
another exception) located at LINE:COL whose message contains TEXT, and whose rendering
quotes that line with a caret under that column. A ``# EXPECTED TEXT`` line, if present,
must appear in the error's ``expected:`` hint. See tests/malformed/README.md.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rlxir import RlxError, parse_file

CORPUS = Path(__file__).parent / "malformed"
FILES = sorted(CORPUS.glob("*.rlx"))
_ERROR = re.compile(r"# ERROR (\d+):(\d+) (.+)")
_EXPECTED = re.compile(r"^# EXPECTED (.+)$", re.MULTILINE)


def _declared(path: Path) -> tuple[int, int, str, str | None]:
    text = path.read_text(encoding="utf-8")
    match = _ERROR.fullmatch(text.split("\n", 1)[0])
    assert match, f"{path.name}: the first line must be '# ERROR LINE:COL TEXT'"
    expected = _EXPECTED.search(text)
    return int(match.group(1)), int(match.group(2)), match.group(3), expected.group(1) if expected else None


def test_the_corpus_covers_every_error_class():
    assert len(FILES) >= 30
    prefixes = {path.name.split("_")[0] for path in FILES}
    assert prefixes >= {"syntax", "op", "attr", "type", "shape", "value", "output", "const", "graph"}


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_malformed_file_reports_its_declared_error(path: Path):
    line, col, message, expected = _declared(path)
    with pytest.raises(RlxError) as caught:
        parse_file(path)
    error = caught.value
    assert (error.file, error.line, error.col) == (str(path), line, col), error.render()
    assert message in error.message, error.render()
    if expected is not None:
        assert expected in (error.expected or ""), error.render()


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_malformed_file_renders_line_and_caret(path: Path):
    line, col, _, _ = _declared(path)
    with pytest.raises(RlxError) as caught:
        parse_file(path)
    rendered = caught.value.render().split("\n")
    source_line = path.read_text(encoding="utf-8").split("\n")[line - 1]
    assert rendered[0].startswith(f"{path}:{line}:{col}: ")
    assert rendered[1] == "  " + source_line
    assert rendered[2] == "  " + " " * (col - 1) + "^"
