"""How a value is held in its arena slot: the target's `sizing` decides the element type.

- ``dtype`` sizing (cpu, metal): every value in its own dtype's bytes; bf16 as its 16-bit
  pattern (the upper half of the float32 that holds it in the interpreter).
- ``f32`` sizing (cuda, rocm, gpu, vulkan): 4 bytes an element. Floats are float32, u32 and
  u64 are uint32, every other integer and bool is int32 (bool as 0 / 1), c64 keeps its real part.

A value whose storage type is not the type the interpreter computes in is converted when
it is read (a temporary outside the arena) and when it is written; the write reports what
the storage changed (an integer past the int32 range, an f64 rounded to float32, an
imaginary part dropped) as a `StorageLoss`, the target's own loss, never hidden.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from rlxir.dtypes import DType

_F32_SIZED = {
    DType.f64: np.float32, DType.f32: np.float32, DType.f16: np.float32, DType.bf16: np.float32,
    DType.i64: np.int32, DType.i32: np.int32, DType.i16: np.int32, DType.i8: np.int32, DType.u8: np.int32,
    DType.u32: np.uint32, DType.u64: np.uint32, DType.bool: np.int32, DType.c64: np.float32,
}


def storage_dtype(dtype: DType, sizing: str) -> np.dtype:
    """The element type a `dtype` value has in its slot under `sizing`."""
    if sizing == "f32":
        return np.dtype(_F32_SIZED[dtype])
    if dtype is DType.bf16:
        return np.dtype(np.uint16)
    return np.dtype(dtype.numpy)


def is_direct(dtype: DType, sizing: str) -> bool:
    """Whether a kernel can read and write the slot as it is (no conversion)."""
    return storage_dtype(dtype, sizing) == np.dtype(dtype.numpy) and not (dtype is DType.bf16 and sizing != "f32")


def decode(xp, stored, dtype: DType, sizing: str):
    """The slot's elements as the interpreter holds `dtype` (a copy when they differ)."""
    if is_direct(dtype, sizing):
        return stored
    if stored.dtype == np.uint16:  # bf16 bit patterns -> float32, with no temporary besides the result
        bits = xp.empty(stored.shape, np.uint32)
        bits[...] = stored
        bits <<= 16
        return bits.view(np.float32)
    if dtype is DType.bool:
        return stored != 0
    return stored.astype(dtype.numpy)


def encode_into(xp, stored, values, dtype: DType, sizing: str):
    """Write `values` (the interpreter's array for `dtype`) into the slot `stored`.

    Returns `(changed elements, largest change)` when the storage could not hold every
    value exactly, else None."""
    if stored.dtype == np.uint16:
        if stored.ndim == 0:  # a view of one element: blocks of rows need an axis
            stored, values = stored.reshape(1), xp.asarray(values).reshape(1)
        for block in row_blocks(stored.shape):  # a block at a time: no temporary of the value's size
            bits = xp.ascontiguousarray(values[block], dtype=np.float32).view(np.uint32) >> 16
            stored[block] = bits.astype(np.uint16)
        return None
    if stored.dtype == values.dtype:
        xp.copyto(stored, values)
        return None
    if dtype.is_complex and not np.issubdtype(stored.dtype, np.complexfloating):
        stored[...] = values.real
        changed = values.imag != 0
    else:
        xp.copyto(stored, values, casting="unsafe")
        if dtype is DType.bool or dtype in (DType.f16, DType.bf16, DType.i32, DType.i16, DType.i8, DType.u8):
            return None  # these fit the 4-byte element exactly
        back = stored.astype(values.dtype)
        changed = back != values
        if np.issubdtype(values.dtype, np.floating):
            changed &= ~(xp.isnan(back) & xp.isnan(values))
    count = int(changed.sum())
    if not count:
        return None
    difference = xp.abs(values.astype(np.complex128 if dtype.is_complex else np.float64)
                        - stored.astype(np.float64))
    return count, float(difference[changed].max())


BLOCK = 1 << 16
"""Elements a bf16 pattern conversion handles at a time."""


def row_blocks(shape: tuple):
    """Index tuples covering `shape` a few rows of axis 0 at a time (about `BLOCK` elements)."""
    if not shape:
        yield ()
        return
    row = math.prod(shape[1:])
    rows = max(1, BLOCK // max(1, row))
    for start in range(0, shape[0], rows):
        yield (slice(start, start + rows),)


@attrs.frozen
class StorageLoss:
    """A value the target's storage could not hold exactly."""

    value: str
    dtype: str
    storage: str
    elements: int
    max_change: float

    def text(self) -> str:
        return (f"%{self.value} ({self.dtype} held as {self.storage}): {self.elements} element(s) changed, "
                f"by up to {self.max_change:.6g}")
