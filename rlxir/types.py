"""Tensor types: an element type and a shape of (possibly symbolic) dims."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import reduce
from typing import TYPE_CHECKING

import attrs

from rlxir.dtypes import DType
from rlxir.symbolic import Dim, Expr, evaluate, format_dim, free_symbols, mul, substitute

if TYPE_CHECKING:
    def _as_dims(shape: Iterable[Dim]) -> tuple[Dim, ...]: ...
else:
    _as_dims = tuple  # the shape field's converter: the builtin itself, typed above for the checker


@attrs.frozen(slots=True, cache_hash=True)
class TensorType:
    """``DTYPE[d0, d1, ...]``; a scalar has the empty shape."""

    dtype: DType
    shape: tuple[Dim, ...] = attrs.field(converter=_as_dims)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> Dim:
        """The element count, symbolic while any dim is."""
        one: Dim = 1
        return reduce(mul, self.shape, one)

    @property
    def symbols(self) -> frozenset[str]:
        names: frozenset[str] = frozenset()
        for dim in self.shape:
            if isinstance(dim, Expr):
                names |= free_symbols(dim)
        return names

    @property
    def is_static(self) -> bool:
        return all(isinstance(dim, int) for dim in self.shape)

    def static_shape(self, bindings: Mapping[str, int] | None = None, context: str = "") -> tuple[int, ...]:
        """The shape as ints; raises `UnboundSymbolError` for a symbol not in `bindings`."""
        return tuple(evaluate(dim, bindings or {}, context) for dim in self.shape)

    def nbytes(self, bindings: Mapping[str, int] | None = None, itemsize: int | None = None) -> int:
        """Exact bytes: elements times the dtype's size (or `itemsize`, e.g. 4 for f32 sizing)."""
        count = evaluate(self.numel, bindings or {}, context=f"sizing {self}")
        return count * (self.dtype.itemsize if itemsize is None else itemsize)

    def bind(self, bindings: Mapping[str, Dim]) -> TensorType:
        if self.is_static:
            return self
        return TensorType(self.dtype, tuple(substitute(dim, bindings) for dim in self.shape))

    def with_dtype(self, dtype: DType) -> TensorType:
        return TensorType(dtype, self.shape)

    def with_shape(self, shape: Iterable[Dim]) -> TensorType:
        return TensorType(self.dtype, tuple(shape))

    def __str__(self) -> str:
        return f"{self.dtype.value}[{', '.join(format_dim(dim) for dim in self.shape)}]"


_CANONICAL: dict[TensorType, TensorType] = {}
_CANONICAL_LIMIT = 100_000


def canonical_type(type_: TensorType) -> TensorType:
    """The one object this process hands out for types equal to `type_`.

    Types are keys, or parts of keys, of the dicts a graph is built and rewritten with (the
    inference cache, bind's and the planner's memos), and a dict compares an equal key by
    identity before it calls `__eq__`. Inference, the parser and bind store these objects
    in the graph; any other equal object still compares and hashes equal."""
    found = _CANONICAL.get(type_)
    if found is None:
        if len(_CANONICAL) >= _CANONICAL_LIMIT:
            _CANONICAL.clear()
        _CANONICAL[type_] = found = type_
    return found
