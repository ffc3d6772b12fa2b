"""Planning instances as CSV files, in the format of MiniMalloc (and idealloc).

One buffer per row under a header naming at least ``id,lower,upper,size``: a name, the
half-open live interval ``[lower, upper)`` and the size in bytes. Other columns are
ignored, except ``offset`` in a solution file. Files with ``start,end`` columns instead
of ``lower,upper`` are MiniMalloc's older format, where ``end`` is inclusive; they are read
as ``[start, end + 1)``.
"""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from rlxir.planning.buffers import Buffer, offsets_in_order
from rlxir.planning.errors import PlanError


class InstanceError(PlanError):
    """A malformed instance or solution file; the message starts with ``file:line:``."""

    def __init__(self, path: Path | str, line: int, message: str, column: int = 1):
        super().__init__(f"{path}:{line}: {message}")
        self.path = str(path)
        self.line = line
        self.column = column


def read_instance(path: Path | str) -> list[Buffer]:
    """The buffers of the instance file at `path` (`-`: standard input), in file order.
    The file is UTF-8, with or without a byte-order mark."""
    buffers, _ = _read(Path(path), want_offsets=False)
    return buffers


def read_solution(path: Path | str) -> tuple[list[Buffer], dict[str, int]]:
    """The buffers of a solution file and their offsets (its ``offset`` column) by name."""
    return _read(Path(path), want_offsets=True)


def write_solution(path, buffers: Sequence[Buffer], offsets: Mapping[str, int] | Sequence[int]) -> None:
    """Write `buffers` with their `offsets` (by name, or one per buffer in order) as CSV to
    `path` (a file name, or a text handle opened with ``newline=""``).

    Columns ``id,lower,upper,size,offset``; `read_solution` reads the file back.
    """
    if isinstance(offsets, Mapping):
        ordered = offsets_in_order([b.name for b in buffers], offsets)
    else:
        ordered = list(offsets)
    if not isinstance(path, (str, Path)):
        _write_rows(path, buffers, ordered)
        return
    with open(path, "w", newline="") as handle:
        _write_rows(handle, buffers, ordered)


def _write_rows(handle, buffers: Sequence[Buffer], ordered: Sequence[int]) -> None:
    writer = csv.writer(handle)
    writer.writerow(["id", "lower", "upper", "size", "offset"])
    for buffer, offset in zip(buffers, ordered, strict=True):
        writer.writerow([buffer.name, buffer.start, buffer.end, buffer.size, offset])


def _text_of(path: Path) -> str:
    """The file's text: UTF-8, a leading byte-order mark dropped; a byte that is not UTF-8 is
    an `InstanceError` at its line and column."""
    if str(path) == "-":
        if sys.stdin is None:
            raise InstanceError("<stdin>", 1, "standard input is closed; expected CSV text")
        data = sys.stdin.buffer.read()
    else:
        data = path.read_bytes()
    data = data.removeprefix(b"\xef\xbb\xbf")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        before = data[:error.start].decode("utf-8")
        line_start = before.rfind("\n") + 1
        raise InstanceError(_shown_name(path), before.count("\n") + 1,
                            f"byte 0x{data[error.start]:02x} is not UTF-8 ({error.reason}); re-save the file as UTF-8",
                            len(before) - line_start + 1) from None


def _shown_name(path: Path) -> str:
    return "<stdin>" if str(path) == "-" else str(path)


def _read(path: Path, want_offsets: bool) -> tuple[list[Buffer], dict[str, int]]:
    text = _text_of(path)
    path = Path(_shown_name(path))
    with io.StringIO(text, newline="") as handle:
        rows = csv.reader(handle)
        header = next(rows, None)
        if header is None:
            raise InstanceError(path, 1, "empty file; expected a header such as id,lower,upper,size")
        columns = _columns(path, [name.strip() for name in header], want_offsets)
        if want_offsets:
            buffers, offsets = _read_rows(path, rows, columns)
        else:
            buffers, offsets = _read_instance_rows(path, rows, columns), {}
    names = [buffer.name for buffer in buffers]
    if len(set(names)) != len(names):
        _raise_repeated_id(path, text, columns["id"])
    return buffers, offsets


def _raise_repeated_id(path: Path, text: str, id_at: int) -> None:
    """An `InstanceError` at the first row whose id an earlier row has (read again: only
    a file that has one pays for the search)."""
    first_lines: dict[str, int] = {}
    with io.StringIO(text, newline="") as handle:
        for line, row in enumerate(csv.reader(handle), start=1):
            if line == 1 or _blank(row):
                continue
            name = row[id_at].strip()
            first = first_lines.setdefault(name, line)
            if first != line:
                raise InstanceError(path, line, f"buffer id {name!r} appears again (first on line {first}); "
                                                "expected a distinct id per buffer")


def _read_rows(path: Path, rows, columns: dict[str, int]) -> tuple[list[Buffer], dict[str, int]]:
    buffers = []
    offsets = {}
    for line, row in enumerate(rows, start=2):
        if _blank(row):
            continue
        buffer, offset = _parse_row(path, line, row, columns)
        buffers.append(buffer)
        if offset is not None:
            offsets[buffer.name] = offset
    return buffers, offsets


def _read_instance_rows(path: Path, rows, columns: dict[str, int]) -> list[Buffer]:
    """The rows of an instance: a fast path for well-formed rows (``int`` accepts the
    same text as `_integer`), and `_parse_row` for the located error otherwise."""
    name_at, lower_at, upper_at, size_at = columns["id"], columns["lower"], columns["upper"], columns["size"]
    inclusive = columns.get("inclusive_end", 0)
    buffers = []
    for line, row in enumerate(rows, start=2):
        try:
            name = row[name_at].strip()
            buffer = Buffer(name, int(row[lower_at]), int(row[upper_at]) + inclusive, int(row[size_at]))
        except (IndexError, ValueError):
            buffer = None
        if buffer is not None and name:
            buffers.append(buffer)
        elif not _blank(row):
            buffers.append(_parse_row(path, line, row, columns)[0])
    return buffers


def _blank(row: list[str]) -> bool:
    """Whether a CSV row holds nothing but whitespace (such rows are skipped)."""
    return all(not field.strip() for field in row)


def _columns(path: Path, header: list[str], want_offsets: bool) -> dict[str, int]:
    """Position of each needed column; the key ``inclusive_end`` marks the old format."""
    if "lower" in header or "upper" in header:
        needed = {"id": "id", "lower": "lower", "upper": "upper", "size": "size"}
    elif "start" in header and "end" in header:
        needed = {"id": "id", "lower": "start", "upper": "end", "size": "size"}
    else:
        needed = {"id": "id", "lower": "lower", "upper": "upper", "size": "size"}
    if want_offsets:
        needed["offset"] = "offset"
    missing = [column for column in needed.values() if column not in header]
    if missing:
        raise InstanceError(
            path, 1, f"header {','.join(header)!r} lacks column(s) {', '.join(missing)} (expected id,lower,upper,size)"
        )
    positions = {key: header.index(column) for key, column in needed.items()}
    if needed["upper"] == "end":
        positions["inclusive_end"] = 1
    return positions


def _parse_row(path: Path, line: int, row: list[str], columns: dict[str, int]) -> tuple[Buffer, int | None]:
    width = max(position for key, position in columns.items() if key != "inclusive_end") + 1
    if len(row) < width:
        raise InstanceError(path, line, f"expected at least {width} fields, got {len(row)}: {','.join(row)!r}")
    name = row[columns["id"]].strip()
    if not name:
        raise InstanceError(path, line, "empty id")
    lower = _integer(path, line, row, columns["lower"], "lower")
    upper = _integer(path, line, row, columns["upper"], "upper") + columns.get("inclusive_end", 0)
    size = _integer(path, line, row, columns["size"], "size")
    offset = _integer(path, line, row, columns["offset"], "offset") if "offset" in columns else None
    try:
        return Buffer(name, lower, upper, size), offset
    except ValueError as error:
        raise InstanceError(path, line, str(error)) from None


def _integer(path: Path, line: int, row: list[str], position: int, column: str) -> int:
    text = row[position].strip()
    try:
        return int(text)
    except ValueError:
        raise InstanceError(path, line, f"{column} must be an integer, got {text!r}") from None
