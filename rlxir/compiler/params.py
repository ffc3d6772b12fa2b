"""Param values from a directory: one ``<name>.npy`` per param.

That is the layout `rlxir import --weights DIR` writes, and what ``rlxir run --params DIR``
and ``rlxir.interpret(graph, params=rlxir.load_params(DIR))`` read. Files that do not end
in ``.npy`` are ignored, so a README or a manifest may sit beside the weights.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import BinaryIO

import numpy as np

from rlxir.errors import RlxError
from rlxir.ir.graph import Graph

NPY_MAGIC = b"\x93NUMPY"


def load_params(directory: str | Path, graph: Graph | None = None) -> dict[str, np.ndarray]:
    """Every ``DIR/<name>.npy`` as ``{name: array}``.

    With `graph`, each name must be one of its params and each array must have that
    param's shape and NumPy dtype (float32 for bf16); otherwise an `RlxError` names the
    file, located at the param's definition where there is one. Without it,
    `rlxir.interpret` checks the same when the arrays are fed. A missing or unreadable
    directory, a `<name>.npy` that is a directory, and a file that is not a numeric .npy
    array, are `RlxError`s too.
    """
    folder = Path(directory)
    if not folder.is_dir():
        reason = "is not a directory" if folder.exists() else "does not exist"
        raise RlxError(f"params directory {folder} {reason}",
                       expected="a directory of <name>.npy files, as `rlxir import --weights DIR` writes")
    try:
        paths = sorted(path for path in folder.iterdir() if path.suffix == ".npy")
    except OSError as error:
        raise RlxError(f"cannot read params directory {folder}: {error.strerror or error}") from None
    for path in paths:
        if not path.is_file():
            what = "a directory" if path.is_dir() else "not a regular file"
            raise RlxError(f"{path} is {what}, not a .npy file", expected="DIR/<name>.npy files written by numpy.save")
    params = {path.stem: read_npy(path) for path in paths}
    if graph is not None:
        for name, array in params.items():
            _check_param(graph, name, array, folder / f"{name}.npy")
    return params


def read_npy(path: str | Path) -> np.ndarray:
    """The array in a .npy file; an unreadable or non-.npy file is an `RlxError`."""
    try:
        with open(path, "rb") as handle:
            if handle.read(len(NPY_MAGIC)) != NPY_MAGIC:
                raise RlxError(f"{path} is not a .npy file", expected="a file written by numpy.save")
            handle.seek(0)
            _check_npy_size(path, handle)
            handle.seek(0)
            return np.load(handle, allow_pickle=False)
    except OSError as error:
        raise RlxError(f"cannot read {path}: {error.strerror or error}") from None
    except ValueError as error:
        raise RlxError(f"cannot read {path}: {error}", expected="a numeric .npy array") from None


def _check_npy_size(path: str | Path, handle: BinaryIO) -> None:
    """Refuse a .npy whose header claims more data than the file holds (say 10^12 x 784),
    before any memory is taken for it."""
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    reader = readers.get(np.lib.format.read_magic(handle))
    if reader is None:
        return  # a newer format: np.load reads (or refuses) it
    shape, _, dtype = reader(handle)
    if dtype.hasobject:
        return  # np.load refuses it (allow_pickle=False) with its own message
    claimed = math.prod(shape) * dtype.itemsize
    held = os.fstat(handle.fileno()).st_size - handle.tell()
    if claimed > held:
        raise RlxError(f"{path}: its header claims {dtype}{list(shape)} ({claimed} bytes), but the file holds "
                       f"only {held} bytes of data", expected="a whole .npy file written by numpy.save")


def _check_param(graph: Graph, name: str, array: np.ndarray, path: Path) -> None:
    if name not in graph or graph.kind(name) != "param":
        known = ", ".join("%" + param for param in graph.params()[:8]) or "none"
        more = ", ..." if len(graph.params()) > 8 else ""
        raise RlxError(f"{path}: graph {graph.name} has no param %{name}", graph.loc,
                       expected=f"files named after its params: {known}{more}")
    type_ = graph.type(name)
    if not type_.is_static:
        return  # a symbolic shape is checked once the graph is bound, when the array is fed
    shape, dtype = type_.static_shape(), type_.dtype.numpy
    if array.shape != shape or array.dtype != dtype:
        raise RlxError(f"{path} holds {array.dtype}{list(array.shape)}, but param %{name} is {type_}",
                       graph.location(name), expected=f"an array of {dtype} and shape {list(shape)}")
