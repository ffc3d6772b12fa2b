"""Element types of the rlx IR, with their sizes in bytes."""

from __future__ import annotations

import builtins
import enum
from typing import TYPE_CHECKING

from rlxir.numpy_on_use import numpy_on_use

if TYPE_CHECKING:
    import numpy as np
else:
    np = numpy_on_use(__name__)  # NumPy imported on first use (rlxir/numpy_on_use.py)


class DType(enum.Enum):
    """An element type. `value` is the IR spelling; `itemsize` its size in bytes."""

    f64 = "f64"
    f32 = "f32"
    f16 = "f16"
    bf16 = "bf16"
    i64 = "i64"
    i32 = "i32"
    i16 = "i16"
    i8 = "i8"
    u8 = "u8"
    u32 = "u32"
    u64 = "u64"
    bool = "bool"  # shadows the builtin in this class body, so annotations say builtins.bool
    c64 = "c64"

    # Members are singletons compared by identity, so the identity hash serves; Enum's own
    # hashes the member's name in a Python call, which every set and dict keyed by dtype
    # paid (185,000-465,000 calls in one compile of a 10^5-statement graph).
    __hash__ = object.__hash__

    @property
    def itemsize(self) -> int:
        return _ITEMSIZE[self]

    @property
    def is_float(self) -> builtins.bool:
        return self in _FLOATS

    @property
    def is_low_precision(self) -> builtins.bool:
        """f16 and bf16: the types a backend may widen to f32 for execution."""
        return self in (DType.f16, DType.bf16)

    @property
    def is_integer(self) -> builtins.bool:
        return self in _INTEGERS

    @property
    def is_complex(self) -> builtins.bool:
        return self is DType.c64

    @property
    def numpy(self) -> np.dtype:
        """The NumPy dtype the reference interpreter computes in (bf16 is held as f32)."""
        return np.dtype(_NUMPY[self])

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, text: str) -> DType | None:
        """The dtype spelled `text`, or None when it names none."""
        return _BY_NAME.get(text)


_ITEMSIZE = {
    DType.f64: 8, DType.f32: 4, DType.f16: 2, DType.bf16: 2,
    DType.i64: 8, DType.i32: 4, DType.i16: 2, DType.i8: 1,
    DType.u8: 1, DType.u32: 4, DType.u64: 8, DType.bool: 1, DType.c64: 8,
}
_FLOATS = frozenset({DType.f64, DType.f32, DType.f16, DType.bf16})
_INTEGERS = frozenset({DType.i64, DType.i32, DType.i16, DType.i8, DType.u8, DType.u32, DType.u64})
_NUMPY = {
    DType.f64: "float64", DType.f32: "float32", DType.f16: "float16", DType.bf16: "float32",
    DType.i64: "int64", DType.i32: "int32", DType.i16: "int16", DType.i8: "int8",
    DType.u8: "uint8", DType.u32: "uint32", DType.u64: "uint64", DType.bool: "bool", DType.c64: "complex64",
}
_BY_NAME = {d.value: d for d in DType}
DTYPE_NAMES = tuple(_BY_NAME)
