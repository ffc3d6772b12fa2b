"""Binding a graph's symbols: each value's type and attributes with the symbols replaced by
integers, its type inferred again (`Graph.bind`, into a copy or in place)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from rlxir.errors import Location, RlxError
from rlxir.ir.inference import infer_result
from rlxir.ir.graph_reading import SharedAttrs, ValueNode
from rlxir.ops import LEAF_KINDS, OpDef, get_op
from rlxir.symbolic import Expr, format_dim, substitute
from rlxir.types import TensorType, canonical_type


def bind_attr(value: Any, values: Mapping[str, int]) -> Any:
    """An attribute value with `values` substituted into its symbolic dims (others as they are)."""
    if isinstance(value, Expr):
        return substitute(value, values)
    if isinstance(value, tuple) and any(isinstance(item, Expr) for item in value):
        return tuple(substitute(item, values) if isinstance(item, Expr) else item for item in value)
    return value


def bound_fields(name: str, data: ValueNode, bound_nodes: Mapping[str, ValueNode], values: Mapping[str, int],
                  bound_types: dict, inferred: dict) -> tuple[dict, TensorType]:
    """(attributes, type) of `name` with `values` bound, its type inferred again from its
    operands' records in `bound_nodes` (bound already); `inferred` memoises inference per
    (op, operand types, `SharedAttrs` object: read-only, kept alive)."""
    type_ = _bound_type(name, data, values, bound_types)
    op = data.op
    if op in LEAF_KINDS:
        attrs = dict(data.attrs) if op == "const" else {key: bind_attr(value, values) for key, value in data.attrs.items()}
    else:
        operand_types = tuple([bound_nodes[operand].type for operand in data.operands])
        memo_key = (op, operand_types, id(data.attrs)) if type(data.attrs) is SharedAttrs else None
        hit = inferred.get(memo_key) if memo_key is not None else None
        if hit is None:
            bound_attrs = {key: bind_attr(value, values) for key, value in data.attrs.items()}
            try:
                hit = infer_result(cast(OpDef, get_op(op)), operand_types, bound_attrs)  # its op is registered
            except RlxError as error:
                raise error.with_location(data.loc) from None
            except ZeroDivisionError:
                raise RlxError(f"binding makes a dim of %{name} divide by zero", data.loc,
                               "symbol values that keep every divisor non-zero") from None
            if memo_key is not None:
                inferred[memo_key] = hit
        attrs, type_ = hit
    # Each distinct (written, bound) pair is checked once; the memo keys pairs beside types.
    if type_ is not data.type and (data.type, type_) not in bound_types:
        _check_dims_not_negative(name, data.type, type_, values, data.loc)
        bound_types[data.type, type_] = type_
    return attrs, type_


def _bound_type(name: str, data: ValueNode, values: Mapping[str, int], bound_types: dict) -> TensorType:
    """`data`'s type with `values` bound (memoised per type: types repeat across layers)."""
    symbolic = data.type
    bound = bound_types.get(symbolic)
    if bound is None:
        try:
            bound = bound_types[symbolic] = canonical_type(symbolic.bind(values))
        except ZeroDivisionError:
            given = ", ".join(f"{symbol}={value}" for symbol, value in values.items())
            raise RlxError(f"with {given}, a dim of %{name} ({symbolic}) divides by zero", data.loc,
                           "symbol values that keep every divisor non-zero") from None
    return bound


def _check_dims_not_negative(name: str, symbolic: TensorType, bound: TensorType, values: Mapping[str, int],
                             loc: Location | None) -> None:
    """A symbol value can make a dim such as ``S - 4`` negative; no tensor has such a shape."""
    for written, dim in zip(symbolic.shape, bound.shape):
        if isinstance(dim, int) and dim < 0:
            given = ", ".join(f"{symbol}={value}" for symbol, value in values.items())
            raise RlxError(f"with {given}, dim {format_dim(written)} of %{name} is {dim}", loc,
                           expected="symbol values that leave every dim non-negative")
