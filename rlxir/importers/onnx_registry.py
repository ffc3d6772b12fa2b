"""The ONNX route's one table: ONNX op type -> converter.

A converter is ``convert(ctx, node, attrs) -> [result per output]`` (see
`rlxir.importers.onnx_ops`). Each converter module calls `register` for the op types it
handles when it is imported; `rlxir.importers.onnx` imports every converter module and reads
`CONVERTERS`. Adding an op is one converter and one `register` entry in the module that
holds it. This module imports nothing else of the importer, so nothing imports back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

Converter = Callable[..., list]

CONVERTERS: dict[str, Converter] = {}
"""ONNX op type (``Domain.Op`` outside the default domain) -> converter."""


def register(table: Mapping[str, Converter]) -> None:
    """Add `table` to `CONVERTERS`; an op type registered twice is an error (two converters
    for one op would make the result depend on import order)."""
    for op_type, converter in table.items():
        existing = CONVERTERS.get(op_type)
        if existing is not None and existing is not converter:
            raise ValueError(f"ONNX op type {op_type!r} has two converters: {existing.__module__}.{existing.__name__} "
                             f"and {converter.__module__}.{converter.__name__}")
        CONVERTERS[op_type] = converter
