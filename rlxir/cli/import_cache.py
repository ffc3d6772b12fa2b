"""The on-disk cache of imported models: a model file imports once, every command reuses it.

An entry is the imported graph as canonical rlx text (``KEY.rlx``) plus what the import
said about it (``KEY.json``: the import's notes, the source path and kind). KEY is the
SHA-256 of the model file's bytes and the import options (kind, batch and sequence symbol,
graph name) and the versions of rlxir and the libraries the import ran through, so an edited
file, other options or an upgrade import again and nothing is ever stale.

The directory is ``$RLXIR_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/rlxir/imports``, else
``~/.cache/rlxir/imports``. Entries are written to a temporary file and renamed, so two
commands importing the same model at once both leave a whole entry. A cache that cannot be
written only costs the next command the import again.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import attrs

from rlxir import __version__

CACHE_ENV = "RLXIR_CACHE_DIR"


@attrs.frozen
class CachedImport:
    """One cache entry: the graph's rlx text, where it lies, and the import's notes."""

    text: str
    path: Path
    notes: tuple[str, ...]


def cache_directory() -> Path:
    """Where imports are cached (see the module docstring)."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rlxir" / "imports"


def import_key(content: bytes, options: Mapping[str, object]) -> str:
    """The cache key of a model file's bytes imported with `options` (JSON-serialisable)."""
    digest = hashlib.sha256()
    digest.update(content)
    stated = {"rlxir": __version__, **options}
    digest.update(json.dumps(stated, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def cached_import(key: str) -> CachedImport | None:
    """The entry for `key`, or None when there is none whole (a missing or half-read pair)."""
    folder = cache_directory()
    text_path, notes_path = folder / f"{key}.rlx", folder / f"{key}.json"
    try:
        text = text_path.read_text(encoding="utf-8")
        notes = json.loads(notes_path.read_text(encoding="utf-8"))["notes"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return CachedImport(text, text_path, tuple(notes))


def store_import(key: str, text: str, notes: tuple[str, ...], source: str, kind: str) -> Path | None:
    """Write the entry for `key`; its text's path, or None when the cache cannot be written."""
    folder = cache_directory()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _replace_atomically(folder / f"{key}.json",
                            json.dumps({"source": source, "kind": kind, "notes": list(notes)}, indent=1))
        _replace_atomically(folder / f"{key}.rlx", text)
    except OSError:
        return None
    return folder / f"{key}.rlx"


def _replace_atomically(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


__all__ = ["CACHE_ENV", "CachedImport", "cache_directory", "import_key", "cached_import", "store_import"]
