"""Writing what commands produce without ever destroying what they read.

Every output file goes through `atomic_output`: the bytes go to a temporary file in the
destination's own directory, which replaces the destination only once it is complete, so
a failure (a full disk, an exception midway) leaves the old file whole. Paths are checked
first (`checked_output_file`, `output_directory`), before any work, so a mistake costs
nothing and ends in one explained error (exit 1), never a traceback.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from rlxir.errors import RlxError

STANDARD_OUTPUT = STANDARD_INPUT = "-"  # as an output path, standard output; as an input, standard input


def add_output_option(parser, what: str = "the result") -> None:
    """-o/--output OUT and --in-place, the pair every command that writes one file takes."""
    parser.add_argument("-o", "--output", metavar="OUT", help=f"write {what} to OUT instead of standard output "
                        "(atomically: a failed write leaves an existing OUT unchanged)")
    parser.add_argument("--in-place", action="store_true",
                        help="allow OUT to be the input file (refused otherwise, so the input is never lost)")


def checked_output_file(path: str, flag: str, inputs: Iterable[str] = (), in_place: bool | None = None) -> Path:
    """`path` as a file `flag` may write: not a directory, in a directory that exists, not
    one of `inputs` unless `in_place` (writing over the file being read loses it), and not a
    symbolic link (a link's target could be any file).
    `in_place` is None for a command that has no --in-place option."""
    if not path:
        raise RlxError(f"{flag} needs a file name, got an empty one")
    target = Path(path)
    if path == STANDARD_OUTPUT:
        return target
    if path.endswith(("/", os.sep)):
        raise RlxError(f"{flag} {path}: names a directory (it ends in /)", expected="a file name, e.g. out.rlx")
    if target.is_dir():
        raise RlxError(f"{flag} {path}: is a directory", expected="a file name, e.g. out.rlx")
    parent = target.parent
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        raise RlxError(f"{flag} {path}: directory {parent} {what}", expected="a path in an existing directory")
    if not in_place and any(_same_file(target, Path(name)) for name in inputs if name and name != "-"):
        hint = "another output path" + ("" if in_place is None else ", or --in-place to replace the input on purpose")
        raise RlxError(f"{flag} {path} is the input file; writing it would replace what is being read", expected=hint)
    if target.is_symlink():
        raise RlxError(f"{flag} {path} is a symbolic link; outputs are never written through links (the file it "
                       "points to could be anything)", expected="the path of the file itself, or a new name")
    return target


def output_directory(path: str, flag: str) -> Path:
    """`path` as a directory `flag` writes into, created when missing; its parent must exist
    (a mistyped parent is an error, not a new tree of directories)."""
    if not path:
        raise RlxError(f"{flag} needs a directory name, got an empty one")
    if path == STANDARD_OUTPUT:
        raise RlxError(f"{flag} -: standard output cannot hold a directory of files", expected="a directory path")
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise RlxError(f"{flag} {path}: is a file, not a directory", expected="a directory path (created if missing)")
    parent = folder.absolute().parent
    if not folder.exists() and not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        raise RlxError(f"{flag} {path}: directory {parent} {what}",
                       expected="a directory in an existing one (only the last part is created)")
    try:
        folder.mkdir(exist_ok=True)
    except OSError as error:
        raise RlxError(f"{flag} {path}: cannot create the directory: {error.strerror or error}") from None
    return folder


def checked_directory_files(paths: Iterable[Path], flag: str, inputs: Iterable[str | Path] = ()) -> None:
    """Refuse, before anything is written, to write any of `paths` (files a directory
    option `flag` fills) through a symbolic link or over one of `inputs`."""
    sources = [Path(name) for name in inputs if name and str(name) != STANDARD_INPUT]
    for path in paths:
        if path.is_symlink():
            raise RlxError(f"{flag}: {path} is a symbolic link; refusing to write through it",
                           expected="a directory without links at the output names (remove the link)")
        source = next((source for source in sources if _same_file(path, source)), None)
        if source is not None:
            raise RlxError(f"{flag}: {path} is the input file {source}; writing it would replace what is being read",
                           expected="another output directory")


@contextlib.contextmanager
def atomic_output(path: str | Path, binary: bool = False) -> Iterator[IO]:
    """A handle whose contents replace `path` only when the block ends without an error.

    A destination that exists and is not a regular file (a device such as /dev/null or
    /dev/full, a pipe) is written directly: renaming over it would replace the device.
    `-` is standard output.
    """
    if str(path) == STANDARD_OUTPUT:
        yield sys.stdout.buffer if binary else sys.stdout
        return
    # A symlink keeps pointing where it did: the file it names is what gets replaced.
    target = Path(os.path.realpath(path)) if Path(path).is_symlink() else Path(path)
    mode = "wb" if binary else "w"
    encoding = None if binary else "utf-8"
    try:
        if target.exists() and not target.is_file():
            with open(target, mode, encoding=encoding) as handle:
                yield handle
            return
        descriptor, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
        try:
            with os.fdopen(descriptor, mode, encoding=encoding, newline="" if not binary else None) as handle:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temporary, _mode_for(target))
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError as error:
        raise RlxError(f"cannot write {target}: {error.strerror or error}",
                       expected="a writable path with space left (the old file, if any, is unchanged)") from None


def write_text_output(path: str | Path, text: str) -> None:
    """Write `text` to `path` atomically (see `atomic_output`)."""
    with atomic_output(path) as handle:
        handle.write(text)


def print_or_write(output: str | None, text: str) -> bool:
    """`text` to the file -o named (atomically), or to stdout when there is none; True when
    it went to a file. `-` is standard output too."""
    if not output or output == STANDARD_OUTPUT:
        print(text, end="")
        return False
    write_text_output(output, text)
    return True


def _mode_for(target: Path) -> int:
    # Keep an existing file's permissions; a new one gets what open() would have given it.
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _same_file(output: Path, source: Path) -> bool:
    try:
        return output.exists() and os.path.samefile(output, source)
    except OSError:
        return False


__all__ = ["STANDARD_INPUT", "STANDARD_OUTPUT", "add_output_option", "atomic_output", "checked_directory_files",
           "checked_output_file", "output_directory", "print_or_write", "write_text_output"]
