"""Type inference of one op application, memoised: what building, binding, parsing and
verifying a graph all ask, 10^5-10^6 times for a big graph."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlxir.ir.graph_reading import NO_ATTRS, SharedAttrs
from rlxir.ops import OpDef, check_attributes
from rlxir.ops.registry import annotation_version, attribute_key
from rlxir.types import TensorType, canonical_type

_INFERRED: dict = {}
_INFERRED_LIMIT = 200_000


def infer_result(opdef: OpDef, operand_types: tuple, attrs: Mapping[str, Any] | None) -> tuple[dict, TensorType]:
    """(canonical attributes, result type) of an op application, memoised. The attributes
    are a `SharedAttrs`: equal applications get the same read-only object.

    Big graphs repeat the same (op, operand types, attributes) many times over (every
    layer of a stack), so inference is cached on exactly those inputs. Rules are pure
    functions of them, and the key holds the `OpDef` itself and the annotation registry's
    version, so re-registering an op or an annotation never serves a stale answer.
    Errors are not cached.
    """
    try:
        key = (opdef, annotation_version(), operand_types,
               tuple((name, attribute_key(value)) for name, value in attrs.items()) if attrs else ())
        hit = _INFERRED.get(key)
    except TypeError:  # an unhashable attribute value: infer without the cache
        key, hit = None, None
    if hit is not None:
        return hit
    canonical, full = check_attributes(opdef, attrs or {})
    inferred = canonical_type(opdef.shape_rule(operand_types, full))
    shared = SharedAttrs(canonical) if canonical else NO_ATTRS
    if key is not None:
        if len(_INFERRED) >= _INFERRED_LIMIT:
            _INFERRED.clear()
        _INFERRED[key] = (shared, inferred)
    return shared, inferred
