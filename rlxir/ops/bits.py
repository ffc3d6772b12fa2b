"""Ops on bit patterns: ``bitcast(x) {to}`` and ``reduce_xor(x) {axes, keepdims}``.

- ``bitcast``: each element's bits read as another dtype of the same width (``f64`` ->
  ``u64``: the IEEE pattern as an integer; ``i32`` -> ``u32``: two's complement read
  unsigned). The shape is kept; bool, bf16 (held as f32 by the interpreter) and c64 are
  refused. A NaN keeps its payload.
- ``reduce_xor``: the bitwise XOR of integer elements over `axes` (0 over none: XOR's
  identity), as ``reduce_sum``'s axes and `keepdims`.

With them a hash of a tensor's values is exact: ``torch.hash_tensor`` is the XOR of each
element's float64 (or int64) bit pattern as a ``u64``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rlxir.dtypes import DType
from rlxir.numpy_on_use import numpy_on_use
from rlxir.ops.core import _register, reduce_rule
from rlxir.ops.registry import AttrSpec, ShapeError, attach
from rlxir.types import TensorType

if TYPE_CHECKING:
    import numpy as np
else:
    np = numpy_on_use(__name__)  # NumPy imported on first use (rlxir/numpy_on_use.py)

UNCASTABLE = frozenset({DType.bool, DType.bf16, DType.c64})
"""Dtypes whose bits the IR does not expose: bool has no defined pattern, bf16 is held as f32
by the interpreter, c64 is two floats."""


def bitcast_rule(types, attrs) -> TensorType:
    (x,) = types
    target = attrs["to"]
    for index, dtype in ((0, x.dtype), (None, target)):
        if dtype in UNCASTABLE:
            raise ShapeError(f"bitcast cannot read the bits of {dtype.value}", operand=index,
                             expected="a float or integer dtype other than bf16")
    if x.dtype.itemsize != target.itemsize:
        raise ShapeError(f"bitcast from {x.dtype.value} ({x.dtype.itemsize} bytes) to {target.value} "
                         f"({target.itemsize} bytes)", operand=0, expected="dtypes of one width")
    return TensorType(target, x.shape)


def reduce_xor_rule(types, attrs) -> TensorType:
    if not types[0].dtype.is_integer:
        raise ShapeError(f"reduce_xor takes integers, got {types[0].dtype.value}", operand=0,
                         expected="an integer dtype")
    return reduce_rule(types, attrs)


def bitcast_reference(inputs: Sequence[np.ndarray], attrs: Mapping) -> np.ndarray:
    return np.asarray(inputs[0], order="C").view(attrs["to"].numpy)  # asarray keeps a 0-d array 0-d


def reduce_xor_reference(inputs: Sequence[np.ndarray], attrs: Mapping) -> np.ndarray:
    return np.bitwise_xor.reduce(inputs[0], axis=tuple(attrs["axes"]), keepdims=attrs["keepdims"])


_register("bitcast", (1, 1), bitcast_rule, ("elementwise", "unary"), {"to": AttrSpec("dtype", doc="the result dtype")},
          doc="each element's bits read as another dtype of the same width")
_register("reduce_xor", (1, 1), reduce_xor_rule, ("reduction",),
          {"axes": AttrSpec("ints", doc="the reduced axes"),
           "keepdims": AttrSpec("bool", False, doc="keep the reduced axes as size 1")},
          doc="bitwise XOR of integer elements over axes")
attach("bitcast", reference=bitcast_reference)
attach("reduce_xor", reference=reduce_xor_reference)
