"""Core ops that index by data and the elementwise ops importers need beyond IR.md's set.

- ``gather_elements(table, idx) {axis}``: ``out[..., i, ...] = table[..., idx[..., i, ...], ...]``
  along `axis`; idx has table's rank, and its dims off `axis` are at most table's (the
  result has idx's shape). ONNX GatherElements, ``torch.gather``.
- ``scatter_elements(data, idx, updates) {axis, reduction}``: a copy of data where
  ``out[..., idx[..., i, ...], ...] = updates[..., i, ...]`` (or combined by `reduction`:
  add, mul, max, min); idx and updates share a shape. ONNX ScatterElements, and ScatterND
  through a flattened index; ``torch.scatter``.
- ``topk(x) {k, axis, largest}``: the i64 positions of the k largest (smallest) elements
  along `axis`, best first, a tie going to the lower position; the values are
  ``gather_elements(x, topk(x))``.
- ``mod(a, b)``: the remainder with the divisor's sign (floored, Python's ``%``);
  ``fmod(a, b)``: with the dividend's sign (truncated, C's ``fmod``).
- ``floor``, ``ceil``: elementwise rounding.

Each has a NumPy reference; out-of-range indices are an `RlxError` at run time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rlxir.dtypes import DType
from rlxir.errors import RlxError
from rlxir.numpy_on_use import numpy_on_use
from rlxir.ops.core import _register, _shape, binary_rule, normalize_axis, unary_rule
from rlxir.ops.registry import AttrSpec, ShapeError, attach
from rlxir.types import TensorType

if TYPE_CHECKING:
    import numpy as np

    Arrays = Sequence[np.ndarray]
else:
    np = numpy_on_use(__name__)  # NumPy imported on first use (rlxir/numpy_on_use.py)

REDUCTIONS = ("none", "add", "mul", "max", "min")


# --- shape rules -----------------------------------------------------------------------
def _integer_index(index: TensorType, operand: int, op: str) -> None:
    if not index.dtype.is_integer:
        raise ShapeError(f"{op} indices are {index.dtype.value}", operand=operand, expected="an integer dtype")


def _fits_inside(index: TensorType, table: TensorType, axis: int, op: str) -> None:
    """idx has table's rank and no static dim off `axis` larger than table's."""
    if index.rank != table.rank:
        raise ShapeError(f"{op} indices {_shape(index.shape)} and table {_shape(table.shape)} differ in rank",
                         operand=1, expected=f"indices of rank {table.rank}")
    for position, (want, have) in enumerate(zip(index.shape, table.shape)):
        if position != axis and isinstance(want, int) and isinstance(have, int) and want > have:
            raise ShapeError(f"{op} indices {_shape(index.shape)} exceed table {_shape(table.shape)} on axis "
                             f"{position}", operand=1, expected=f"at most {have} on axis {position}")


def gather_elements_rule(types, attrs) -> TensorType:
    table, index = types
    _integer_index(index, 1, "gather_elements")
    if table.rank == 0:
        raise ShapeError("cannot gather from a scalar", operand=0)
    axis = normalize_axis(attrs["axis"], table.rank)
    _fits_inside(index, table, axis, "gather_elements")
    return table.with_shape(index.shape)


def scatter_elements_rule(types, attrs) -> TensorType:
    data, index, updates = types
    _integer_index(index, 1, "scatter_elements")
    if updates.dtype is not data.dtype:
        raise ShapeError(f"scatter_elements updates are {updates.dtype.value} into {data.dtype.value} data",
                         operand=2, expected=f"{data.dtype.value} updates")
    if data.rank == 0:
        raise ShapeError("cannot scatter into a scalar", operand=0)
    if tuple(index.shape) != tuple(updates.shape):
        raise ShapeError(f"scatter_elements indices {_shape(index.shape)} and updates {_shape(updates.shape)} "
                         "differ", operand=2, expected="updates of the indices' shape")
    _fits_inside(index, data, normalize_axis(attrs["axis"], data.rank), "scatter_elements")
    return data


def topk_rule(types, attrs) -> TensorType:
    x = types[0]
    if x.rank == 0:
        raise ShapeError("topk needs a tensor of rank at least 1", operand=0)
    axis = normalize_axis(attrs["axis"], x.rank)
    k, dim = attrs["k"], x.shape[axis]
    if k < 0 or isinstance(dim, int) and k > dim:
        raise ShapeError(f"topk k={k} is out of range for dim {dim}", expected=f"0 <= k <= {dim}")
    shape = list(x.shape)
    shape[axis] = k
    return TensorType(DType.i64, shape)


def _floating_rule(types, attrs) -> TensorType:
    if not types[0].dtype.is_float:
        raise ShapeError(f"rounding takes a float tensor, got {types[0].dtype.value}", operand=0)
    return unary_rule(types, attrs)


# --- references ------------------------------------------------------------------------
def _checked_index(indices: np.ndarray, size, op: str) -> np.ndarray:
    if indices.size and (indices.min() < 0 or indices.max() >= size):
        bad = indices.min() if indices.min() < 0 else indices.max()
        raise RlxError(f"{op} index {bad} is out of range for a dim of {size}", expected=f"indices in [0, {size})")
    return indices.astype(np.int64)


def _grid(index: np.ndarray, axis: int) -> tuple:
    """Full advanced-indexing tuple addressing `index`'s positions, `index` on `axis`."""
    grid = list(np.indices(index.shape, sparse=True))
    grid[axis] = index
    return tuple(grid)


def gather_elements_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    table, indices = inputs
    axis = attrs["axis"] % table.ndim
    index = _checked_index(indices, table.shape[axis], "gather_elements")
    return table[_grid(index, axis)]


_COMBINE = {"add": "add", "mul": "multiply", "max": "maximum", "min": "minimum"}  # NumPy's ufuncs


def scatter_elements_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    data, indices, updates = inputs
    axis = attrs["axis"] % data.ndim
    index = _checked_index(indices, data.shape[axis], "scatter_elements")
    result = np.array(data, copy=True)
    where = _grid(index, axis)
    if attrs["reduction"] == "none":
        result[where] = updates
    else:  # unbuffered, so repeated indices all count
        getattr(np, _COMBINE[attrs["reduction"]]).at(result, where, updates)
    return result


def topk_reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
    x = inputs[0]
    axis = attrs["axis"] % x.ndim
    keys = -x if attrs["largest"] else x
    if x.dtype == np.bool_:
        keys = ~x if attrs["largest"] else x
    order = np.argsort(keys, axis=axis, kind="stable")  # stable: a tie keeps the lower position first
    return np.take(order, np.arange(attrs["k"]), axis=axis).astype(np.int64)


def _floored_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.mod(a, b).astype(np.result_type(a, b))


def _truncated_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.fmod(a, b).astype(np.result_type(a, b))


def _elementwise(function):
    def reference(inputs: Arrays, attrs: Mapping) -> np.ndarray:
        if any(np.issubdtype(array.dtype, np.integer) and np.any(array == 0) for array in inputs[1:]):
            raise RlxError("integer mod by zero", expected="non-zero integer divisors")
        return np.asarray(function(*inputs))
    return reference


# --- registration ----------------------------------------------------------------------
_register("gather_elements", (2, 2), gather_elements_rule, ("shape",),
          {"axis": AttrSpec("int", 0, doc="the indexed axis")}, operands=("table", "idx"),
          doc="table elements picked along an axis by an index tensor of table's rank")
_register("scatter_elements", (3, 3), scatter_elements_rule, ("shape",),
          {"axis": AttrSpec("int", 0, doc="the indexed axis"),
           "reduction": AttrSpec("str", "none", REDUCTIONS, doc="how an update combines with the element")},
          operands=("data", "idx", "updates"), doc="data with updates written along an axis at idx")
_register("topk", (1, 1), topk_rule, ("reduction",),
          {"k": AttrSpec("int", doc="how many"), "axis": AttrSpec("int", -1, doc="the searched axis"),
           "largest": AttrSpec("bool", True, doc="the largest (else the smallest) first")},
          doc="i64 positions of the k largest elements along an axis, best first")
for _name, _what in (("mod", "floored remainder (the divisor's sign)"),
                     ("fmod", "truncated remainder (the dividend's sign)")):
    _register(_name, (2, 2), binary_rule, ("elementwise", "binary"), doc=f"broadcasting {_what}")
for _name in ("floor", "ceil"):
    _register(_name, (1, 1), _floating_rule, ("elementwise", "unary"), doc=f"elementwise {_name}")

attach("gather_elements", reference=gather_elements_reference)
attach("scatter_elements", reference=scatter_elements_reference)
attach("topk", reference=topk_reference)
attach("mod", reference=_elementwise(_floored_mod))
attach("fmod", reference=_elementwise(_truncated_mod))
attach("floor", reference=lambda inputs, attrs: np.floor(inputs[0]))
attach("ceil", reference=lambda inputs, attrs: np.ceil(inputs[0]))

NEW_OPS = ("gather_elements", "scatter_elements", "topk", "mod", "fmod", "floor", "ceil")
del _name, _what
