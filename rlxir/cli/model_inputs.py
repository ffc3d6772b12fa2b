"""FILE as the user has it: an .rlx text, an ONNX model, a torch.export archive (.pt2) or a
transformers config.json, read into one `Module` by the one path every command takes.

The kind is decided by the file's content, not its name (`model_kind`): a zip holding the
torch.export layout (or any zip named ``.pt2``) is a program, JSON naming a ``model_type`` or ``architectures`` is a
config, bytes that open as a protobuf field (ONNX's first field, ``ir_version``) or a file
named ``.onnx`` are ONNX, and everything else is rlx text. Models are imported on the fly
with the options `rlxir import` has (the batch symbol, the graph's name) and cached on disk
(`rlxir.cli.import_cache`), so a second command on the same file parses the cached text.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import logging
import sys
import zipfile
from pathlib import Path

from rlxir.cli import import_cache, progress
from rlxir.errors import Location, RlxError, SourceText
from rlxir.ir.graph import Module
from rlxir.ir.parser import parse, parse_file
from rlxir.ir.printer import print_graph
from rlxir.ir.syntax_errors import decode_source
from rlxir.ir.verifier import verify

RLX, ONNX, PT2, CONFIG = "rlx", "onnx", "pt2", "config"
SEQUENCE_SYMBOL = "S"  # a config's sequence symbol; -D S=4096 binds it

KIND_NAMES = {ONNX: "an ONNX model", PT2: "a torch.export program (.pt2)", CONFIG: "a transformers config.json"}
INSTALL = {ONNX: ("onnx", "pip install 'rlxir[onnx]'"), PT2: ("torch", "pip install 'rlxir[torch]'"),
           CONFIG: ("torch and transformers", "pip install 'rlxir[torch,models]'")}
REQUIRED_MODULES = {ONNX: ("onnx",), PT2: ("torch",), CONFIG: ("torch", "transformers")}


def model_kind(path: str, content: bytes) -> str:
    """RLX, ONNX, PT2 or CONFIG, decided by `content` (the file's bytes)."""
    if content.startswith(b"PK\x03\x04") and (_holds_exported_program(path) or Path(path).suffix.lower() == ".pt2"):
        return PT2
    if _is_model_config(content):
        return CONFIG
    if content[:1] == b"\x08" or Path(path).suffix.lower() == ".onnx":
        return ONNX  # ONNX's ModelProto opens with ir_version (field 1, a varint); no rlx text starts with 0x08
    return RLX


def _holds_exported_program(path: str) -> bool:
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError):
        return False
    return any(name.endswith(("/archive_format", "/models/model.json", "serialized_exported_program.json"))
               for name in names)


def _json_object(content: bytes) -> dict | None:
    """`content` parsed, when it is a JSON object; else None."""
    if not content.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        return None
    try:
        parsed = json.loads(content.decode("utf-8-sig"))
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _refuse_broken_json(path: str, content: bytes) -> None:
    """A file that opens like a JSON object (no rlx text starts with ``{``) but does not parse
    is refused where the JSON breaks, not read as rlx text."""
    if not content.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        return
    text = content.decode("utf-8-sig", errors="replace")
    try:
        json.loads(text)
    except json.JSONDecodeError as error:
        raise RlxError(f"{path} is not valid JSON: {error.msg}", Location(path, error.lineno, error.colno,
                                                                           SourceText(path, text)),
                       expected="a complete transformers config.json") from None


def _is_model_config(content: bytes) -> bool:
    parsed = _json_object(content)
    return parsed is not None and ("model_type" in parsed or "architectures" in parsed)


def load_model_module(path: str, batch_dim: str = "B", name: str | None = None, training: bool = False) -> Module:
    """The module FILE holds: parsed when it is rlx text, else imported (or read from the cache).
    `training` asks a config for its training loss (`rlxir.importers.hf_config.import_config`)."""
    if path == "-":
        return parse_file(path)
    content = _read_bytes(path)
    kind = model_kind(path, content)
    if kind == RLX:
        _refuse_broken_json(path, content)
    if kind == RLX and _json_object(content) is not None:
        raise RlxError(f"{path} is JSON but not a transformers config: it names no model_type and no architectures",
                       Location(path, 1, 1), expected='a config.json with "model_type" (e.g. "llama"), or an .rlx file')
    if kind == RLX:
        return parse(decode_source(content, path), path)
    if not content:
        raise RlxError(f"{path} is empty (0 bytes), not {KIND_NAMES[kind]}", expected="a model file")
    training = training and kind == CONFIG  # the other kinds are imported as the file has them
    options = {"kind": kind, "batch_dim": batch_dim, "name": name, "training": training, **_library_versions(kind)}
    key = import_cache.import_key(content, options)
    cached = import_cache.cached_import(key)
    if cached is None:
        cached = _imported_and_stored(key, path, content, kind, (batch_dim, name, training))
    for note in cached.notes:
        print(f"{path}: note: {note}", file=sys.stderr)
    return parse(cached.text, str(cached.path))


def load_model_weights(path: str, batch_dim: str = "B", name: str | None = None) -> dict:
    """The weights an ONNX model or a .pt2 program carries, by param name (imported again:
    the cache keeps graphs, not weights); empty for rlx text and a config (built without
    weights), whose params `rlxir run` fills from its seed."""
    if path == "-":
        return {}
    content = _read_bytes(path)
    kind = model_kind(path, content)
    if kind not in (ONNX, PT2) or not content:
        return {}
    progress.show(f"reading the weights of {path} ...")
    try:
        return dict(_import(kind, path, content, batch_dim, name, False).params)
    finally:
        progress.clear()


def _read_bytes(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise RlxError(f"cannot read {path}: {error.strerror or error}") from None


def _imported_and_stored(key: str, path: str, content: bytes, kind: str, options: tuple) -> import_cache.CachedImport:
    """Import `path` (options: batch symbol, graph name, training) and cache what it gave."""
    progress.show(f"importing {path} ({KIND_NAMES[kind]}) ...")
    try:
        imported = _import(kind, path, content, *options)
    finally:
        progress.clear()
    text = print_graph(imported.graph)
    checked_text(text, path)
    stored = import_cache.store_import(key, text, tuple(imported.notes), str(Path(path).resolve()), kind)
    return import_cache.CachedImport(text, stored or Path(f"<import of {path}>"), tuple(imported.notes))


def checked_text(text: str, model: str) -> None:
    """The text import writes must parse and verify: refuse it (exit 1) rather than write it."""
    try:
        for graph in parse(text, f"<import of {model}>"):
            verify(graph)
    except RlxError as error:
        raise RlxError(f"importing {model} gives text rlxir rejects: {error.message}", error.loc,
                       expected=error.expected or "a model whose names and dims rlx can express") from None


def _import(kind: str, path: str, content: bytes, batch_dim: str, name: str | None, training: bool):
    """The ImportedGraph of `path`; every failure an RlxError naming the file. `training`
    matters to a config only (`load_model_module`)."""
    importer = _importer(kind)
    try:
        return importer(path, content, batch_dim, name, training)
    except RlxError as error:
        if error.loc is not None or path in error.message:
            raise
        raise RlxError(f"{path}: {error.message}", expected=error.expected) from None


def _importer(kind: str):
    """The import function of `kind`; a missing extra is one error naming its install command."""
    missing = [module for module in REQUIRED_MODULES[kind] if not _importable(module)]
    if missing:
        packages, command = INSTALL[kind]
        verb = "is" if len(missing) == 1 else "are"
        raise RlxError(f"reading {KIND_NAMES[kind]} needs {packages}, and {' and '.join(missing)} {verb} not installed",
                       expected=command)
    return {ONNX: _import_onnx, PT2: _import_pt2, CONFIG: _import_config}[kind]


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def _import_onnx(path: str, content: bytes, batch_dim: str, name: str | None, training: bool):
    from rlxir.importers.onnx import import_onnx

    return import_onnx(path, batch_dim=batch_dim, name=name)


def _import_pt2(path: str, content: bytes, batch_dim: str, name: str | None, training: bool):
    import torch

    from rlxir.importers.torch import import_program

    reasons = _LoggedErrors()
    export_log = logging.getLogger("torch.export")
    # torch logs each failed reader's traceback; keep the first error, show none of them
    handlers, propagates = export_log.handlers, export_log.propagate
    export_log.handlers, export_log.propagate = [reasons], False
    try:
        program = torch.export.load(path)
    except Exception as error:  # torch raises many classes for archives it cannot read
        cause = _first_line(reasons.first or error).split(". ")[0]
        raise RlxError(f"{path}: torch {torch.__version__} cannot load this program: {cause}",
                       expected="a file torch.export.save wrote with this torch version") from None
    finally:
        export_log.handlers, export_log.propagate = handlers, propagates
    return import_program(program, name or Path(path).stem.replace("-", "_") or "model",
                          _program_symbols(program, batch_dim))


class _LoggedErrors(logging.Handler):
    """Keeps the first exception torch.export logs while it tries its archive readers."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.first: BaseException | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.first is None and record.exc_info and record.exc_info[1] is not None:
            self.first = record.exc_info[1]


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


def _program_symbols(program, batch_dim: str) -> dict[str, str]:
    """Names for a loaded program's dynamic dims (the archive keeps torch's, such as ``s77``):
    the first dynamic leading dim of the inputs is `batch_dim`; the others, in the order the
    inputs show them, S, S2, S3, ..."""
    symbols: dict[str, str] = {}
    for axis, torch_name in _dynamic_dims(program):
        if torch_name in symbols:
            continue
        if axis == 0 and batch_dim not in symbols.values():
            symbols[torch_name] = batch_dim
            continue
        others = len(symbols) - (batch_dim in symbols.values())
        symbols[torch_name] = SEQUENCE_SYMBOL if others == 0 else f"{SEQUENCE_SYMBOL}{others + 1}"
    return symbols


def _dynamic_dims(program) -> list[tuple[int, str]]:
    """(axis, torch's symbol) of every dynamic dim of the program's user inputs, in order."""
    import torch

    user_inputs = set(program.graph_signature.user_inputs)
    shapes = [node.meta["val"].shape for node in program.graph.nodes
              if node.op == "placeholder" and node.name in user_inputs and isinstance(node.meta.get("val"), torch.Tensor)]
    return [(axis, str(size.node.expr)) for shape in shapes for axis, size in enumerate(shape)
            if isinstance(size, torch.SymInt)]


def _import_config(path: str, content: bytes, batch_dim: str, name: str | None, training: bool):
    from rlxir.importers.hf_config import import_config

    config = json.loads(content.decode("utf-8-sig"))
    try:
        return import_config(config, path, batch_dim=batch_dim, sequence_dim=SEQUENCE_SYMBOL, name=name,
                             training=training)
    except RlxError as error:
        if error.loc is not None:
            raise
        message = error.message.removeprefix(f"{path}: ")  # the location names the file
        raise RlxError(message, _config_location(path, content), expected=error.expected) from None


def _config_location(path: str, content: bytes) -> Location:
    """The config's ``"model_type"`` key (else its first line): what an import failure is about."""
    text = content.decode("utf-8-sig")
    offset = max(text.find('"model_type"'), 0)
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return Location(path, line, col, SourceText(path, text))


def _library_versions(kind: str) -> dict[str, str]:
    """The versions an import of `kind` runs through (part of the cache key)."""
    versions = {}
    for module in REQUIRED_MODULES[kind]:
        try:
            versions[module] = importlib.metadata.version(module)
        except importlib.metadata.PackageNotFoundError:  # the import will say it is missing
            versions[module] = "missing"
    return versions


__all__ = ["RLX", "ONNX", "PT2", "CONFIG", "SEQUENCE_SYMBOL", "model_kind", "load_model_module", "load_model_weights",
           "checked_text"]
